"""Downloads against a real HTTP server on 127.0.0.1: cut off mid-way, then resumed."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from pathlib import Path

import pytest

from core.errors import DownloadError
from core.models import ModelStore, download_file
from core.models.registry import MODELS, ModelFile, ModelSpec

PAYLOAD = os.urandom(300_000)
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class _Server:
    """Serves PAYLOAD at /file and /repo/resolve/main/*; can cut the first response off half-way."""

    def __init__(self) -> None:
        self.cut_first = False
        self.pace: threading.Event | None = None  # when set: each 20 kB piece waits for the event
        self.requests: list[str | None] = []  # Range header of each request
        self.files: dict[str, bytes] = {}
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                name = self.path.rsplit("/", 1)[-1]
                data = outer.files.get(name, PAYLOAD if name == "file" else None)
                outer.requests.append(self.headers.get("Range"))
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.send_header("X-Linked-Etag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.end_headers()
                body = data[start:]
                if outer.cut_first:
                    outer.cut_first = False
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(2)  # cut off mid-way
                    return
                if outer.pace is None:
                    self.wfile.write(body)
                    return
                for i in range(0, len(body), 20_000):
                    outer.pace.wait(0.05)  # a slow link: 20 kB every 50 ms unless released
                    try:
                        self.wfile.write(body[i:i + 20_000])
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = _Server()
    yield s
    s.close()


def test_cut_off_download_is_resumed(server, tmp_path: Path):
    dest = tmp_path / "model.bin"
    server.cut_first = True
    seen = []
    with pytest.raises(DownloadError, match="interrupted"):
        download_file(f"{server.url}/file", dest, SHA, progress=seen.append, retries=0)
    part = tmp_path / "model.bin.part"
    assert part.exists() and 0 < part.stat().st_size < len(PAYLOAD)
    kept = part.stat().st_size
    download_file(f"{server.url}/file", dest, SHA, progress=seen.append, retries=0)
    assert dest.read_bytes() == PAYLOAD and not part.exists()
    assert server.requests[-1] == f"bytes={kept}-"  # resumed, not restarted
    assert seen[-1].done == len(PAYLOAD) and seen[-1].total == len(PAYLOAD) and seen[-1].resumed_from == kept


def test_interrupted_download_retries_by_itself(server, tmp_path: Path):
    server.cut_first = True
    dest = download_file(f"{server.url}/file", tmp_path / "f.bin", SHA, retries=2)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests[0] is None and server.requests[1].startswith("bytes=")


def test_checksum_mismatch_deletes_and_says_so(server, tmp_path: Path):
    with pytest.raises(DownloadError, match="corrupt"):
        download_file(f"{server.url}/file", tmp_path / "f.bin", "0" * 64)
    assert not (tmp_path / "f.bin").exists() and not (tmp_path / "f.bin.part").exists()


def test_server_checksum_used_when_none_pinned(server, tmp_path: Path):
    # No expected digest given: the server's linked ETag (sha256) is checked.
    (tmp_path / "f.bin.part").write_bytes(b"garbage-that-is-not-the-start")
    with pytest.raises(DownloadError, match="corrupt"):
        download_file(f"{server.url}/file", tmp_path / "f.bin")


def test_missing_file_is_a_clear_error(server, tmp_path: Path):
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_file(f"{server.url}/nothing", tmp_path / "x")


def test_cancel_keeps_partial(server, tmp_path: Path):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(DownloadError, match="cancelled"):
        download_file(f"{server.url}/file", tmp_path / "f.bin", SHA, cancel=cancel)


def test_store_downloads_a_hub_model_with_alternative_names(server, tmp_path: Path, monkeypatch):
    server.files = {"model.bin": b"weights" * 1000, "config.json": b"{}", "tokenizer.json": b"{}",
                    "vocabulary.json": b"[]"}
    spec = ModelSpec("test-whisper", "whisper-ct2", "test", 7000, (
        ModelFile("model.bin"), ModelFile("config.json"), ModelFile("tokenizer.json"),
        ModelFile("vocabulary.txt", alternatives=("vocabulary.json",))), hub_repo="org/repo")
    monkeypatch.setitem(MODELS, spec.name, spec)
    store = ModelStore(tmp_path / "store")
    assert store.status("test-whisper").state == "downloadable"
    path = store.download("test-whisper", base_url=server.url)
    assert (path / "vocabulary.json").read_bytes() == b"[]" and (path / "model.bin").stat().st_size == 7000
    assert store.status("test-whisper").state == "ready"
    assert store.resolve("test-whisper") == path

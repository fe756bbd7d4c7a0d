"""HTTP downloads with progress, resume of partial files and checksum check.

Uses only the standard library. A download writes ``DEST.part`` and renames it
to ``DEST`` after the checksum matched (flushed to disk first, so ``DEST`` is never
a torn file, even after a crash or power cut); an interrupted download keeps the
``.part`` file and the next call resumes it with an HTTP ``Range`` request.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import logger
from ..errors import DownloadCancelled, DownloadError
from ..paths import fsync_dir

CHUNK = 1 << 16


@dataclass
class DownloadProgress:
    """Progress of one file: bytes done, total (None if unknown), and speed."""

    url: str
    done: int
    total: int | None
    bytes_per_s: float
    resumed_from: int = 0

    @property
    def fraction(self) -> float | None:
        """Done as a fraction of the total, when the total is known."""
        return self.done / self.total if self.total else None


ProgressCallback = Callable[[DownloadProgress], None]

_SHA256_RE = re.compile(r'^(?:W/)?"?([0-9a-f]{64})"?$')


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
            if progress:
                progress(len(block))
    return digest.hexdigest()


def _server_sha256(headers: http.client.HTTPMessage) -> str | None:
    """Model hubs send an LFS file's sha256 as its (linked) ETag."""
    for name in ("X-Linked-Etag", "ETag"):
        value = headers.get(name)
        if value:
            match = _SHA256_RE.match(value.strip())
            if match:
                return match.group(1)
    return None


def download_file(
    url: str,
    dest: Path,
    expected_sha256: str | None = None,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    retries: int = 3,
    timeout: float = 30.0,
) -> Path:
    """Download ``url`` to ``dest``, resuming ``dest.part`` if present.

    The checksum is ``expected_sha256`` or, failing that, the sha256 the server
    states in its ETag. A mismatch deletes the partial file and raises
    :class:`DownloadError`. ``cancel`` stops the download, keeping the partial
    file. Connection failures are retried ``retries`` times, each resuming.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    attempt = 0
    while True:
        try:
            server_sha = _download_once(url, part, progress, cancel, timeout)
            break
        except DownloadCancelled:
            raise
        except (OSError, http.client.HTTPException, DownloadError) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code in (401, 403, 404):
                raise DownloadError(f"The server refused {url} (HTTP {exc.code}).") from exc
            attempt += 1
            have = part.stat().st_size if part.exists() else 0
            logger.warning("download of %s interrupted at %d bytes (%s), attempt %d", url, have, exc, attempt)
            if attempt > retries:
                raise DownloadError(
                    f"The download of {dest.name} was interrupted ({exc}); {have} bytes are kept and "
                    "the next attempt resumes from there."
                ) from exc
            time.sleep(min(2.0 * attempt, 10.0))
    want = expected_sha256 or server_sha
    if want:
        got = sha256_file(part)
        if got != want:
            part.unlink(missing_ok=True)
            raise DownloadError(
                f"The downloaded {dest.name} is corrupt (sha256 {got[:12]}… instead of {want[:12]}…); "
                "it was deleted, please download again."
            )
    else:
        logger.warning("no checksum known for %s; kept without verification", url)
    with open(part, "rb+") as fh:
        os.fsync(fh.fileno())
    part.replace(dest)
    fsync_dir(dest.parent)
    return dest


def _download_once(
    url: str,
    part: Path,
    progress: ProgressCallback | None,
    cancel: threading.Event | None,
    timeout: float,
) -> str | None:
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "sotto/0.1"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:
            # Range not satisfiable: the part file is already complete (or bigger).
            return _server_sha256(exc.headers)
        raise
    with response:
        status = response.status
        server_sha = _server_sha256(response.headers)
        if status == 206:
            total = _total_from_content_range(response.headers.get("Content-Range"))
            mode = "ab"
            resumed_from = have
        else:
            length = response.headers.get("Content-Length")
            total = int(length) if length else None
            mode = "wb"
            resumed_from = have = 0
        done = have
        started = time.monotonic()
        last_report = 0.0
        with open(part, mode) as fh:
            while True:
                if cancel is not None and cancel.is_set():
                    raise DownloadCancelled(f"Download of {part.name[:-5]} cancelled; {done} bytes kept for resuming.")
                block = response.read(CHUNK)
                if not block:
                    break
                fh.write(block)
                done += len(block)
                now = time.monotonic()
                if progress and (now - last_report > 0.1):
                    last_report = now
                    rate = (done - resumed_from) / max(now - started, 1e-6)
                    progress(DownloadProgress(url, done, total, rate, resumed_from))
        if total is not None and done < total:
            raise DownloadError(f"connection closed after {done} of {total} bytes")
        if progress:
            rate = (done - resumed_from) / max(time.monotonic() - started, 1e-6)
            progress(DownloadProgress(url, done, total, rate, resumed_from))
        return server_sha


def _total_from_content_range(value: str | None) -> int | None:
    if not value or "/" not in value:
        return None
    total = value.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None

"""Privacy: nothing leaves the machine unless the user asks for a download.

Each session below is a real process (the command line, the speculative engine with
PyTorch and transformers, the desktop app from start-up to quitting), and every attempt
it makes to reach another machine is seen at two levels:

- the kernel: ``strace -f`` logs every ``connect``/``sendto``/``sendmsg`` of the process
  and its children, native code included (CTranslate2, llama.cpp, Qt, PortAudio), inside a
  network namespace with no interface but loopback (``unshare -n``): an attempt fails at
  once instead of reaching anything;
- Python: an audit hook (a ``sitecustomize`` on ``PYTHONPATH``) records and refuses every
  ``socket.connect``, ``socket.getaddrinfo`` and ``urllib.Request`` (which names the address a
  library wanted: Hugging Face, the transformers or torch hubs, telemetry).

No offline switch (``HF_HUB_OFFLINE`` and the like) is set: Sotto must not try, not merely fail.
A control run (a plain ``urlopen``) shows both levels catch an attempt.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import require, require_tool

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"


def _fails(cmd: list[str]) -> str:
    """Why ``cmd`` fails here ("" when it runs)."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return "" if proc.returncode == 0 else (proc.stderr.strip() or f"exit {proc.returncode}")


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="strace and network namespaces are Linux's")


@pytest.fixture(scope="module", autouse=True)
def _the_watch():
    """strace and a network namespace, or no test here: skipped saying which is missing, and under
    CI (``CI=true``) failed instead, so a CI machine without them cannot pass by skipping."""
    strace = require_tool("strace", "packaging/setup.sh test installs it")
    why = _fails([strace, "-f", "-o", "/dev/null", "true"])
    require(not why, f"`strace` cannot trace here (ptrace not permitted): {why}")
    unshare = require_tool("unshare", "util-linux")
    why = _fails([unshare, "-n", "true"])
    require(not why, f"`unshare -n` (a network namespace) is not permitted here (needs root or CAP_SYS_ADMIN): {why}")


@functools.cache
def _only_traced_calls_stop() -> list[str]:
    """strace's ``--seccomp-bpf`` where this strace and kernel have it: only the traced calls stop the
    process (the same calls are seen); without it every system call of the model threads stops under
    ptrace, and the sessions run about twice as slowly."""
    return [] if _fails(["strace", "-f", "--seccomp-bpf", "-e", "trace=connect", "-o", "/dev/null", "true"]) \
        else ["--seccomp-bpf"]


HOOK = textwrap.dedent('''
    """Installed by tests/test_privacy.py: record and refuse every attempt to use the network."""
    import json, os, socket, sys

    _LOG = os.environ["SOTTO_PRIVACY_LOG"]
    _LOCAL_HOSTS = (None, "", "localhost", "127.0.0.1", "::1")


    def _record(event, detail):
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "detail": repr(detail)[:300]}) + "\\n")


    def _hook(event, args):
        if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            sock = args[0]
            if getattr(sock, "family", None) == getattr(socket, "AF_UNIX", object()):
                return  # a local socket (PulseAudio, D-Bus): not the network
            _record(event, args[1:])
            raise ConnectionRefusedError(f"test_privacy refuses {event} {args[1:]!r}")
        if event == "socket.getaddrinfo" and args[0] not in _LOCAL_HOSTS:
            _record(event, args[0])
            raise socket.gaierror(f"test_privacy refuses looking up {args[0]!r}")
        if event in ("socket.gethostbyname", "socket.gethostbyname_ex") and args[0] not in _LOCAL_HOSTS:
            _record(event, args[0])
            raise socket.gaierror(f"test_privacy refuses looking up {args[0]!r}")
        if event == "urllib.Request":
            _record(event, args[0])


    sys.addaudithook(_hook)
''')

# The desktop app from start-up to quitting: models preloaded as at every start, one session of a
# recording with German translation through the caption service, the overlay shown (offscreen).
APP = textwrap.dedent('''
    import sys, time
    from PySide6.QtWidgets import QApplication
    from app.controllers.app import AppController

    qt = QApplication([])
    controller = AppController(show_windows=True, welcome=False)
    controller.apply_setting("translation.target", "de")
    controller.apply_setting("audio.source", sys.argv[1])

    def wait(predicate, seconds):
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                raise SystemExit("the app did not get there in time")
            qt.processEvents()
            time.sleep(0.01)

    wait(lambda: controller.service.translation_engine is not None, 300)
    controller.toggle_start()
    wait(lambda: controller.service.state != "idle", 60)
    wait(lambda: controller.service.state == "idle", 300)
    session = controller.service.last_session
    entries = [] if session is None else __import__("core.session.history", fromlist=["x"]).read_session(
        session.directory).entries
    print("ENTRIES", len(entries), sum(1 for e in entries if e.translation))
    controller.quit()
''')

_ATTEMPT = re.compile(r"\b(connect|sendto|sendmsg)\(.*\bAF_INET6?\b")


def _run_watched(
    tmp_path: Path, args: list[str], timeout: float = 600
) -> tuple[subprocess.CompletedProcess, list[str], list[dict]]:
    """Run ``args`` under strace in a namespace without network, with the audit hook; the result,
    the kernel-level attempts and the Python-level ones."""
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir(exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    py_log, trace = tmp_path / "python-network.jsonl", tmp_path / "strace.log"
    env = {k: v for k, v in os.environ.items() if not re.match(r"(HF_|TRANSFORMERS_|HUGGINGFACE|TORCH_HOME)", k)}
    env.update(PYTHONPATH=f"{hook_dir}{os.pathsep}{ROOT}", SOTTO_PRIVACY_LOG=str(py_log),
               QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path / "home"))  # a fresh home: no user caches
    cmd = ["unshare", "-n", "strace", "-f", "-qq", *_only_traced_calls_stop(), "-e", "trace=connect,sendto,sendmsg",
           "-o", str(trace), *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    kernel = [line for line in trace.read_text(errors="replace").splitlines() if _ATTEMPT.search(line)] \
        if trace.exists() else []
    python = [json.loads(line) for line in py_log.read_text().splitlines()] if py_log.exists() else []
    return proc, kernel, python


def _no_identifier(tmp_path: Path) -> None:
    """Nothing that identifies the machine was left for a later upload (ONNX Runtime's telemetry
    keeps a device id and an event cache under ~/.cache/Microsoft when it is on)."""
    left = [str(p.relative_to(tmp_path)) for p in (tmp_path / "home").rglob("*") if "Microsoft" in p.parts]
    assert not left, left


def _report(kernel: list[str], python: list[dict]) -> str:
    return "network attempts:\n" + "\n".join(kernel[:20] + [f"{p['event']}: {p['detail']}" for p in python[:20]])


def test_the_watch_sees_an_attempt(tmp_path):
    """The control: a plain request is seen by the kernel-level and the Python-level watch."""
    proc, kernel, python = _run_watched(tmp_path, [str(PYTHON), "-c", (
        "import urllib.request\n"
        "try:\n urllib.request.urlopen('http://192.0.2.1/model.bin', timeout=5)\n"
        "except OSError as exc:\n print('refused', exc)\n")], timeout=60)
    assert "refused" in proc.stdout, proc.stderr
    assert any(p["event"] == "urllib.Request" and "192.0.2.1" in p["detail"] for p in python), python
    assert any(p["event"].startswith("socket.") for p in python), python
    # refused by the hook before the system call: the kernel sees a raw connect that bypasses Python's
    proc, kernel, _ = _run_watched(tmp_path, [str(PYTHON), "-S", "-c", (
        "import _socket\ns = _socket.socket()\n"
        "try:\n s.connect(('192.0.2.1', 80))\nexcept OSError as exc:\n print('failed', exc)\n")], timeout=60)
    assert "failed" in proc.stdout, proc.stderr
    assert any("192.0.2.1" in line for line in kernel), kernel


def test_a_caption_session_with_translation_sends_nothing(tmp_path, shared):
    out = tmp_path / "out"
    proc, kernel, python = _run_watched(tmp_path, [
        str(PYTHON), "-m", "app", "caption", str(shared / "asr" / "jfk.flac"), "--target", "de", "--quiet",
        "--out", str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fellow" in (out / "source.srt").read_text().lower()
    assert (out / "translation.srt").read_text().strip()
    assert not kernel and not python, _report(kernel, python)
    _no_identifier(tmp_path)


def test_the_speculative_engine_with_pytorch_and_transformers_sends_nothing(tmp_path, shared):
    proc, kernel, python = _run_watched(tmp_path, [
        str(PYTHON), "-m", "app", "caption", str(shared / "asr" / "jfk.flac"), "--asr-engine", "speculative",
        "--target", "none", "--quiet", "--out", str(tmp_path / "out")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fellow" in (tmp_path / "out" / "source.srt").read_text().lower()
    assert not kernel and not python, _report(kernel, python)
    _no_identifier(tmp_path)


def test_the_desktop_app_from_start_to_quit_sends_nothing(tmp_path, shared):
    script = tmp_path / "app_session.py"
    script.write_text(APP, encoding="utf-8")
    proc, kernel, python = _run_watched(tmp_path, [str(PYTHON), str(script), str(shared / "asr" / "jfk.flac")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = re.search(r"ENTRIES (\d+) (\d+)", proc.stdout)
    assert entries and int(entries.group(1)) >= 1 and int(entries.group(2)) >= 1, proc.stdout[-2000:]
    assert not kernel and not python, _report(kernel, python)
    _no_identifier(tmp_path)

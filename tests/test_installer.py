"""The Linux installer, built for real and run like a user's machine would.

The package comes from the documented build command (``bash packaging/build.sh --formats deb``),
which caches the bundle by a hash of its inputs (.cache/bundle/<hash>/): the first run builds it
(a few minutes), later runs with the same sources take seconds. The package is unpacked with
``dpkg-deb -x`` into a temporary root and run from there with a clean environment: no virtual
environment on PATH, a fresh HOME (so an empty model store), no network (``unshare -n`` where
it works), and nothing written into the installed files. Then it is installed with apt-get and
removed again.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require, require_tool

from core import __version__
from core.captions import normalize_english, word_error_rate

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
BUILD = ["nice", "-n", "10", "bash", "packaging/build.sh", "--formats", "deb"]
DEB = ROOT / "dist" / f"sotto_{__version__}_amd64.deb"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux") or platform.machine() != "x86_64",
                       reason="the .deb is built for Linux x86_64"),
    pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb (Debian/Ubuntu)"),
]


@pytest.fixture(scope="module")
def offline() -> list[str]:
    """The command prefix that runs a program without network: ``unshare -n``, checked to leave no
    interface but loopback. Never an online run in its place: where it cannot isolate, the test is
    skipped saying why, and under CI (``CI=true``) it fails."""
    unshare = require_tool("unshare", "util-linux")
    probe = subprocess.run([unshare, "-n", "cat", "/proc/net/dev"], capture_output=True, text=True)
    require(probe.returncode == 0, "cannot run offline: `unshare -n` (a network namespace) is not permitted here "
                                   f"(needs root or CAP_SYS_ADMIN): {probe.stderr.strip() or probe.returncode}")
    interfaces = {line.split(":")[0].strip() for line in probe.stdout.splitlines()[2:] if ":" in line}
    assert interfaces == {"lo"}, f"`unshare -n` left network interfaces: {interfaces}"
    return [unshare, "-n"]


@pytest.fixture(scope="module")
def deb() -> Path:
    build = subprocess.run(BUILD, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, f"the build failed:\n{build.stdout[-3000:]}\n{build.stderr[-5000:]}"
    assert DEB.is_file()
    return DEB


@pytest.fixture(scope="module")
def unpacked(deb: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("installed")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True, timeout=600)
    return root


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def user(offline: list[str], unpacked: Path, tmp_path_factory):
    """Runs the unpacked ``sotto`` as a fresh user would: clean environment, new HOME, offline."""
    home = tmp_path_factory.mktemp("home")
    exe = unpacked / "opt" / "sotto" / "sotto"
    before = _snapshot(unpacked)

    def run(*args: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
        clean = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", **env}
        return subprocess.run([*offline, str(exe), *args], capture_output=True, text=True, env=clean,
                              cwd=home, timeout=timeout)

    run.home = home  # type: ignore[attr-defined]
    yield run
    assert _snapshot(unpacked) == before, "the installed files changed while Sotto ran"
    assert not list((home / ".cache").glob("sotto/models/*")), "models were prepared in the user's cache"


def test_the_package_has_the_layout_and_dependencies_of_the_issue(deb: Path, unpacked: Path):
    fields = {k: subprocess.run(["dpkg-deb", "-f", str(deb), k], capture_output=True, text=True).stdout.strip()
              for k in ("Package", "Version", "Architecture", "Depends")}
    assert fields["Package"] == "sotto" and fields["Version"] == __version__ and fields["Architecture"] == "amd64"
    for lib in ("libportaudio2", "libxcb-cursor0", "libegl1", "libpulse0"):
        assert lib in fields["Depends"].split(", ")
    app = unpacked / "opt" / "sotto"
    assert os.access(app / "sotto", os.X_OK)
    assert os.readlink(unpacked / "usr" / "bin" / "sotto") == "/opt/sotto/sotto"
    desktop = (unpacked / "usr" / "share" / "applications" / "sotto.desktop").read_text()
    assert "Exec=/opt/sotto/sotto" in desktop and "Icon=sotto" in desktop
    assert (unpacked / "usr/share/icons/hicolor/256x256/apps/sotto.png").is_file()
    models = app / "_internal" / "models"
    assert sorted(p.name for p in models.iterdir()) == ["gemma-3-270m", "voice-ge2e", "whisper-base", "whisper-tiny.en"]
    assert not list(models.rglob("hf-converted"))
    assert not (app / "_internal" / "torch").exists(), "PyTorch is left out of the default build"


def _packages_of(paths: set[str]) -> set[str]:
    owners: set[str] = set()
    for path in sorted(paths):
        for candidate in (path, os.path.realpath(path)):
            found = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if found.returncode == 0:
                owners |= {p.split(":")[0].strip() for p in found.stdout.split(": ")[0].split(", ")}
                break
        else:
            owners.add(f"(no package owns {path})")
    return owners


def test_every_library_the_bundle_needs_from_the_system_is_a_dependency(deb: Path, unpacked: Path):
    internal = unpacked / "opt" / "sotto" / "_internal"
    outside: set[str] = set()
    for path in [unpacked / "opt" / "sotto" / "sotto", *internal.rglob("*.so*")]:
        if path.is_symlink() or not path.is_file():
            continue
        ldd = subprocess.run(["ldd", str(path)], capture_output=True, text=True,
                             env={"LD_LIBRARY_PATH": str(internal), "PATH": "/usr/bin:/bin"})
        for match in re.finditer(r"=> (/\S+)", ldd.stdout):
            if not match.group(1).startswith(str(unpacked)):
                outside.add(match.group(1))
    depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True).stdout
    declared = {d.strip().split(" ")[0] for d in depends.split(",")}
    declared |= {d.removesuffix("t64") for d in declared}
    missing = {p for p in _packages_of(outside) if p.removesuffix("t64") not in declared}
    assert not missing, f"libraries from packages the .deb does not depend on: {missing}"


def test_version_and_self_test_offline(user):
    version = user("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"sotto {__version__}", version
    test = user("self-test")
    assert test.returncode == 0, f"{test.stdout}\n{test.stderr}"
    lines = test.stdout.splitlines()
    for check in ("ctranslate2", "llama.cpp", "PortAudio", "voice activity model", "models", "transcribe demo",
                  "translate", "Qt offscreen"):
        assert any(line.startswith(f"ok     {check}:") for line in lines), test.stdout
    assert "installed bundle" in lines[0]
    assert any("PyTorch: not included in this build" in line for line in lines), test.stdout
    assert "self-test" not in user("--help").stdout  # hidden


def test_self_test_fails_with_a_sentence_when_the_models_are_missing(user, tmp_path: Path):
    empty = tmp_path / "no-models"
    empty.mkdir()
    test = user("self-test", SOTTO_BUNDLED_MODELS_DIR=str(empty))
    assert test.returncode == 1
    assert "FAILED models: The model 'whisper-tiny.en' is not on this machine" in test.stdout, test.stdout
    assert test.stderr.strip().splitlines()[-1] == (
        "sotto: the self-test failed (models, transcribe demo, translate); see the lines above.")


def test_caption_offline_is_accurate_and_translated(user, tmp_path: Path):
    out = tmp_path / "out"
    run = user("caption", str(SHARED / "asr" / "jfk.flac"), "--target", "de", "--out", str(out), "--quiet")
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in (out / "captions.jsonl").read_text().splitlines()]
    assert records, "no captions were written"
    source = _srt_text(out / "source.srt")
    reference = normalize_english((SHARED / "asr" / "jfk.txt").read_text())
    wer = word_error_rate(reference, normalize_english(source))
    assert wer <= 0.10, f"WER {wer:.2f}: {source}"
    translation = _srt_text(out / "translation.srt")
    assert len(translation.split()) >= 10 and translation != source, translation


def test_the_speculative_engine_says_it_is_not_included(user, tmp_path: Path):
    run = user("caption", str(SHARED / "asr" / "jfk.flac"), "--asr-engine", "speculative", "--target", "none",
               "--quiet")
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1] == (
        "sotto: The speculative speech engine is not included in this build of Sotto; "
        "set asr.engine to faster-whisper (the default)."), run.stderr


def test_screenshot_offscreen(user, tmp_path: Path):
    run = user("screenshot", str(tmp_path), "--quiet", QT_QPA_PLATFORM="offscreen")
    assert run.returncode == 0, run.stderr
    for name in ("overlay.png", "settings.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _srt_text(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    return " ".join(line for line in lines if line.strip() and not line.strip().isdigit() and "-->" not in line)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("apt-get") is None, reason="installing needs root and apt-get")
def test_apt_installs_and_removes_the_package_cleanly(offline: list[str], deb: Path, tmp_path: Path):
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # offline: every dependency is already here (packaging/setup.sh installs them), so apt needs no network
    install = subprocess.run([*offline, "apt-get", "install", "-y", "--no-install-recommends", str(deb)],
                             capture_output=True, text=True, env=env, timeout=900)
    try:
        assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
        version = subprocess.run(["/usr/bin/sotto", "--version"], capture_output=True, text=True,
                                 env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=120)
        assert version.stdout.strip() == f"sotto {__version__}", version
    finally:
        purge = subprocess.run([*offline, "apt-get", "purge", "-y", "sotto"], capture_output=True, text=True,
                               env=env, timeout=900)
    assert purge.returncode == 0, purge.stderr
    assert not Path("/opt/sotto").exists() and not Path("/usr/bin/sotto").is_symlink()
    assert not Path("/usr/share/applications/sotto.desktop").exists()
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "sotto"], capture_output=True, text=True)
    assert "installed" not in status.stdout.replace("not-installed", ""), status.stdout


# -- the other systems' build inputs (their builds run on GitHub Actions, not here) --------------------
def test_the_macos_info_plist_asks_for_both_audio_permissions():
    sys.path.insert(0, str(ROOT / "packaging" / "pyinstaller"))
    from options import BuildOptions, info_plist

    keys = info_plist(ROOT / "packaging" / "macos" / "Info.plist.fragment", __version__)
    assert "meeting" in keys["NSAudioCaptureUsageDescription"] and keys["NSMicrophoneUsageDescription"]
    assert keys["CFBundleShortVersionString"] == __version__
    default = BuildOptions.from_env({})
    assert "torch" in default.excludes and "transformers" in default.excludes and "bench" in default.excludes
    assert "torch" not in BuildOptions.from_env({"SOTTO_BUNDLE_TORCH": "1"}).excludes


def test_the_windows_installer_is_per_user_with_a_shortcut_and_an_uninstaller():
    iss = (ROOT / "packaging" / "windows" / "sotto.iss").read_text()
    assert re.search(r"^PrivilegesRequired=lowest$", iss, re.M)
    assert re.search(r'^Name: "\{group\}\\Sotto"; Filename: "\{app\}\\sottow.exe"', iss, re.M)
    assert "{uninstallexe}" in iss and "DefaultDirName={autopf}\\Sotto" in iss


def test_the_installers_workflow_is_valid():
    lint = ROOT / ".venv" / "bin" / "check-jsonschema"
    if not lint.exists():
        pytest.skip("check-jsonschema comes with the build tools (packaging/build-requirements.txt)")
    run = subprocess.run([str(lint), "--builtin-schema", "vendor.github-workflows",
                          str(ROOT / ".github" / "workflows" / "installers.yml")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr

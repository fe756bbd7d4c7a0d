"""Models shipped read-only inside an installed Sotto: found, loaded, never written.

The shipped folder is made by the installers' own staging step
(packaging/pyinstaller/stage_models.py) from the real bundled models.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.models import ModelStore
from core.models.registry import MODELS
from core.models.store import BUNDLED_MODELS_ENV, bundled_models_dir, load_failure

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packaging" / "pyinstaller"))
from stage_models import StagingError, stage  # noqa: E402

BUNDLED = [name for name, spec in MODELS.items() if spec.bundled]


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, store) -> Path:
    """Every bundled model staged as an installer ships it (linked from the test model store)."""
    folder = tmp_path_factory.mktemp("bundle") / "models"
    assert stage(folder, store) == BUNDLED
    return folder


def test_staging_ships_only_the_model_files_and_a_matching_manifest(shipped: Path):
    for name in BUNDLED:
        spec = MODELS[name]
        files = sorted(p.name for p in (shipped / name).iterdir())
        manifest = json.loads((shipped / name / "manifest.json").read_text())
        assert files == sorted([*manifest["files"], "manifest.json"])  # no hf-converted/, no staging leftovers
        for mfile in spec.files:
            entry = manifest["files"].get(mfile.name) or manifest["files"][mfile.alternatives[0]]
            assert entry["sha256"] == mfile.sha256


def test_a_fresh_store_loads_the_shipped_models_without_writing(shipped: Path, tmp_path: Path):
    before = _snapshot(shipped)
    user = tmp_path / "user-cache"
    store = ModelStore(user, bundled=shipped)
    for name in BUNDLED:
        status = store.status(name)
        assert status.state == "ready" and shipped in status.path.parents, status
        path = store.resolve(name)
        assert shipped in path.parents
    assert store.prepare_all_bundled() == BUNDLED  # nothing to prepare: all shipped
    assert not user.exists()  # the user's store was never created
    from core.asr import FasterWhisperEngine
    from core.translate import LlamaTranslator, TranslatorOptions

    FasterWhisperEngine(store.resolve("whisper-tiny.en"))
    LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(target_lang="de", n_ctx=512)).close()
    store.remove("whisper-base")  # the shipped copy is read-only: it stays
    assert store.status("whisper-base").state == "ready"
    assert _snapshot(shipped) == before and not user.exists()


def test_a_ready_copy_in_the_users_store_wins(shipped: Path, tmp_path: Path, store: ModelStore):
    user = ModelStore(tmp_path, bundled=shipped)
    user.prepare_bundled(MODELS["whisper-tiny.en"])  # e.g. fetched again with `sotto models get`
    assert tmp_path in user.resolve("whisper-tiny.en").parents
    assert shipped in user.resolve("whisper-base").parents
    # a damaged copy in the user's store falls back to the shipped one
    with open(tmp_path / "whisper-tiny.en" / "model.bin", "r+b") as fh:
        fh.truncate(1000)
    assert shipped in user.resolve("whisper-tiny.en").parents


def test_a_damaged_shipped_model_is_reported_in_one_sentence(tmp_path: Path, store: ModelStore):
    shipped = tmp_path / "models"
    stage(shipped, store)
    target = shipped / "gemma-3-270m" / "gemma-3-270m-q4_k_m.gguf"
    data = target.read_bytes()
    target.unlink()  # a private copy, not a link into the test store
    target.write_bytes(data[:1000] + b"x" * (len(data) - 1000))
    user = ModelStore(tmp_path / "user", bundled=shipped)
    error = load_failure(user.resolve("gemma-3-270m"), "gguf", RuntimeError("bad file"))
    assert "damaged" in str(error) and "sotto models get gemma-3-270m" in str(error)


def test_staging_refuses_a_file_that_does_not_match_its_pinned_digest(tmp_path: Path, store: ModelStore):
    source = ModelStore(tmp_path / "store")
    source.prepare_bundled(MODELS["whisper-tiny.en"])
    config = tmp_path / "store" / "whisper-tiny.en" / "config.json"
    text = config.read_text()
    config.write_text(text[:-2] + ("x" if text[-2] != "x" else "y") + text[-1])  # same size: only the digest tells
    with pytest.raises(StagingError, match="pinned sha256"):
        stage(tmp_path / "out", source)


def test_where_the_shipped_models_are_found(tmp_path: Path, monkeypatch):
    monkeypatch.delenv(BUNDLED_MODELS_ENV, raising=False)
    assert bundled_models_dir() is None  # a source checkout ships nothing
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert bundled_models_dir() is None  # a bundle built without models
    (tmp_path / "models").mkdir()
    assert bundled_models_dir() == tmp_path / "models"
    monkeypatch.setenv(BUNDLED_MODELS_ENV, str(tmp_path / "elsewhere"))
    assert bundled_models_dir() == tmp_path / "elsewhere"


def test_the_models_command_lists_and_verifies_shipped_models(shipped: Path, tmp_path: Path):
    env = dict(os.environ, SOTTO_MODELS_DIR=str(tmp_path / "user"), **{BUNDLED_MODELS_ENV: str(shipped)})
    sotto = [sys.executable, "-m", "app"]
    listing = subprocess.run([*sotto, "models"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert listing.returncode == 0, listing.stderr
    for name in BUNDLED:
        rows = listing.stdout.splitlines()
        assert any(line.startswith(name) and "ready" in line.split() for line in rows), listing.stdout
    verify = subprocess.run([*sotto, "models", "verify", "whisper-base"], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=120)
    assert verify.returncode == 0 and str(shipped) in verify.stdout, verify.stderr
    assert not (tmp_path / "user").exists()

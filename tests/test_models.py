"""The model store with the real bundled models: prepared once, verified, clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.errors import ModelError, ModelNotFoundError
from core.models import ModelStore, sha256_file
from core.models.registry import MODELS


@pytest.mark.parametrize("name", ["whisper-tiny.en", "whisper-base", "gemma-3-270m"])
def test_bundled_models_are_ready_and_match_pinned_digests(store: ModelStore, name: str):
    path = store.resolve(name)
    assert store.status(name).state == "ready"
    manifest = json.loads((store.model_dir(name) / "manifest.json").read_text())
    for mfile in MODELS[name].files:
        assert manifest["files"][mfile.name]["sha256"] == mfile.sha256
    if name == "gemma-3-270m":
        assert path.suffix == ".gguf" and path.read_bytes()[:4] == b"GGUF"
    else:
        assert (path / "model.bin").exists()


def test_split_model_is_joined_and_verified(store: ModelStore):
    # whisper-base ships as model.bin.part1 + part2 in two packages: the store joins them.
    path = store.resolve("whisper-base")
    spec = MODELS["whisper-base"]
    assert len(spec.files[0].parts) == 2
    assert sha256_file(path / "model.bin") == spec.files[0].sha256


def test_prepare_into_a_fresh_store_reports_progress(tmp_path: Path):
    store = ModelStore(tmp_path)
    seen = []
    path = store.resolve("whisper-tiny.en", on_status=lambda msg, frac: seen.append(frac))
    assert (path / "model.bin").exists() and seen and seen[-1] == pytest.approx(1.0)
    assert store.status("whisper-tiny.en").state == "ready"
    # a damaged file is noticed by the quick check and re-made from the bundle
    with open(path / "model.bin", "r+b") as fh:
        fh.truncate(1000)
    assert store.status("whisper-tiny.en").state == "corrupt"
    store.resolve("whisper-tiny.en")
    assert (path / "model.bin").stat().st_size == MODELS["whisper-tiny.en"].files[0].size


def test_missing_model_names_the_command(store: ModelStore):
    with pytest.raises(ModelNotFoundError) as err:
        store.resolve("whisper-medium")
    assert "sotto models get whisper-medium" in str(err.value)
    with pytest.raises(ModelNotFoundError, match="no model called 'whisper-huge'"):
        store.resolve("whisper-huge")


def test_local_paths(tmp_path: Path, store: ModelStore):
    tiny = store.resolve("whisper-tiny.en")
    assert store.resolve(str(tiny)) == tiny
    with pytest.raises(ModelNotFoundError, match="no model at"):
        store.resolve(str(tmp_path / "nothing.gguf"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="holds no Whisper model"):
        store.resolve(str(tmp_path / "empty"))


def test_corrupt_whisper_model_fails_with_a_sentence(tmp_path: Path, store: ModelStore):
    from core.asr import FasterWhisperEngine

    broken = tmp_path / "tiny-broken"
    shutil.copytree(store.resolve("whisper-tiny.en"), broken)
    with open(broken / "model.bin", "r+b") as fh:
        fh.truncate(5_000_000)
    with pytest.raises(ModelError, match="could not be loaded"):
        FasterWhisperEngine(broken)


def test_broken_gguf_fails_with_a_sentence(tmp_path: Path, store: ModelStore):
    from core.translate import LlamaTranslator

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(ModelError, match="could not be loaded"):
        LlamaTranslator(bad)
    truncated = tmp_path / "truncated.gguf"
    with open(store.resolve("gemma-3-270m"), "rb") as fh:
        truncated.write_bytes(fh.read(20_000_000))
    with pytest.raises(ModelError, match="could not be loaded"):
        LlamaTranslator(truncated)

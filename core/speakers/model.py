"""The bundled voice encoder: Resemblyzer's ``pretrained.pt`` from the model store (copied from the
installed package and verified by sha256 like every bundled model), converted once to a numpy
``.npz`` of the encoder's weights that needs no PyTorch to load.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..models import ModelStore, sha256_file
from ..paths import write_atomic
from .checkpoint import CheckpointError, read_legacy_checkpoint
from .encoder import WEIGHT_NAMES, EncoderOptions, VoiceEncoder

MODEL_NAME = "voice-ge2e"
CONVERTED = "ge2e.npz"
_SOURCE_KEY = "source_sha256"


def _read_weights(source: Path) -> dict[str, np.ndarray]:
    try:
        state = read_legacy_checkpoint(source)["model_state"]
        weights = {n: np.asarray(state[n], dtype=np.float32) for n in WEIGHT_NAMES}
        VoiceEncoder(weights)  # refuses missing tensors
    except (OSError, CheckpointError, KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"The voice encoder file {source} is missing or damaged ({exc}); run "
                         f"`sotto models get {MODEL_NAME}` to prepare it again.") from exc
    return weights


def convert(source: Path, target: Path) -> Path:
    """Write the encoder weights of the checkpoint ``source`` to ``target`` (.npz, atomically), with the
    source's sha256 so a changed source is converted anew. Raises :class:`ModelError` in one sentence."""
    weights = _read_weights(source)
    buffer = io.BytesIO()
    np.savez(buffer, **weights, **{_SOURCE_KEY: np.array(sha256_file(source))})
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, buffer.getvalue())
    return target


def _is_current(target: Path, source: Path) -> bool:
    try:
        with np.load(target) as data:
            return str(data[_SOURCE_KEY]) == sha256_file(source)
    except (OSError, KeyError, ValueError):
        return False


def converted_path(store: ModelStore) -> Path | None:
    """The converted weights beside the model's checkpoint, converting them first where the store may write
    (its own copy of the model). None for a read-only shipped copy without them: an installed Sotto never
    writes models into the user's cache, so the caller converts in memory instead."""
    source = store.resolve(MODEL_NAME) / "pretrained.pt"
    target = source.parent / CONVERTED
    if _is_current(target, source):
        return target
    if source.parent.resolve() != store.model_dir(MODEL_NAME).resolve():
        return None
    return convert(source, target)


def load_encoder(store: ModelStore | None = None, options: EncoderOptions | None = None) -> VoiceEncoder:
    """The voice encoder, ready to embed. Raises :class:`ModelError` in one sentence when it cannot be had."""
    store = store or ModelStore()
    path = converted_path(store)
    if path is None:
        return VoiceEncoder(_read_weights(store.resolve(MODEL_NAME) / "pretrained.pt"), options)
    try:
        return VoiceEncoder.load(path, options)
    except (OSError, KeyError, ValueError) as exc:
        raise ModelError(f"The voice encoder in {path} could not be loaded ({exc}); run "
                         f"`sotto models get {MODEL_NAME}` to prepare it again.") from exc

"""Decoding audio files to mono 16 kHz float32 with clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import logger
from ..errors import AudioError

SAMPLE_RATE = 16000


def decode_file(path: str | Path, channel: str = "mix") -> np.ndarray:
    """Decode any file PyAV/FFmpeg can read to mono float32 at 16 kHz.

    ``channel`` is ``mix`` (stereo down-mixed), ``left`` or ``right``. Raises
    :class:`AudioError` with one sentence for a missing, empty, corrupt or
    unsupported file; a truncated file yields what could be decoded (logged).
    """
    import av  # faster-whisper's decoder backend
    from faster_whisper.audio import decode_audio

    path = Path(path)
    if not path.exists():
        raise AudioError(f"The audio file {path} does not exist.")
    if path.is_dir():
        raise AudioError(f"{path} is a folder, not an audio file.")
    if path.stat().st_size == 0:
        raise AudioError(f"The audio file {path} is empty.")
    if channel not in ("mix", "left", "right"):
        raise AudioError(f"Unknown channel '{channel}'; use mix, left or right.")
    try:
        if channel == "mix":
            audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
        else:
            left, right = decode_audio(str(path), sampling_rate=SAMPLE_RATE, split_stereo=True)
            audio = left if channel == "left" else right
    except (av.error.FFmpegError, av.error.InvalidDataError, ValueError, IndexError, StopIteration) as exc:
        logger.exception("decoding %s failed", path)
        raise AudioError(
            f"Could not read audio from {path}: the file is corrupt or not in an audio format Sotto understands."
        ) from exc
    except OSError as exc:
        logger.exception("decoding %s failed", path)
        raise AudioError(f"Could not read {path} ({exc.strerror or exc}).") from exc
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    if audio.size == 0:
        raise AudioError(
            f"Could not read audio from {path}: the file is corrupt or not in an audio format Sotto understands "
            "(no sound could be decoded from it)."
        )
    if not np.isfinite(audio).all():
        logger.warning("non-finite samples in %s replaced with zeros", path)
        audio = np.nan_to_num(audio, nan=0.0, posinf=0.0, neginf=0.0)
    return audio

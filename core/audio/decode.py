"""Decoding audio files to mono 16 kHz float32 with clear errors."""

from __future__ import annotations

import stat
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .. import logger
from ..errors import AudioError
from .convert import CHANNELS, SAMPLE_RATE, downmix

MIN_TRUNCATED_S = 1.0
"""A file cut off before its header's length that still yields less than this is refused as
broken; a longer cut-off file is captioned as far as it goes (and logged)."""


def decode_file(path: str | Path, channel: str = "mix") -> np.ndarray:
    """Decode any file PyAV/FFmpeg can read to mono float32 at 16 kHz.

    ``channel`` is ``mix`` (stereo down-mixed), ``left`` or ``right``. Raises
    :class:`AudioError` with one sentence for a missing, empty, corrupt or
    unsupported file, a pipe or device, and a file cut off with less than
    :data:`MIN_TRUNCATED_S` left; a longer truncated file yields what could be decoded (logged).
    """
    import av  # faster-whisper's decoder backend
    from faster_whisper.audio import decode_audio

    path = check_file(path, channel)
    try:
        if channel == "mix":
            audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
        else:  # both channels as (n, 2) frames, and the one asked for chosen from them
            frames = np.stack(decode_audio(str(path), sampling_rate=SAMPLE_RATE, split_stereo=True), axis=1)
            audio = downmix(frames, channel)
            del frames
    except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:  # before av's own (also OSError)
        logger.exception("decoding %s failed", path)
        raise AudioError(f"Could not read {path} ({exc.strerror or exc}).") from exc
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
    _check_truncation(path, audio.size / SAMPLE_RATE)
    if not np.isfinite(audio).all():
        logger.warning("non-finite samples in %s replaced with zeros", path)
        audio = np.nan_to_num(audio, nan=0.0, posinf=0.0, neginf=0.0)
    return audio


def check_file(path: str | Path, channel: str = "mix") -> Path:
    """The checks before decoding: one sentence (:class:`AudioError`) for a missing, empty or
    unreadable file, a folder, a pipe or device, and an unknown channel."""
    path = Path(path)
    if not path.exists():
        raise AudioError(f"The audio file {path} does not exist.")
    if path.is_dir():
        raise AudioError(f"{path} is a folder, not an audio file.")
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):  # a pipe or device: reading it could block forever
        raise AudioError(f"{path} is not an audio file but a pipe or device; save the recording to a file first.")
    if info.st_size == 0:
        raise AudioError(f"The audio file {path} is empty.")
    if channel not in CHANNELS:
        raise AudioError(f"Unknown channel '{channel}'; use mix, left or right.")
    try:
        with open(path, "rb"):  # a clear sentence for a file we may not read
            pass
    except OSError as exc:
        raise AudioError(f"Could not read {path} ({exc.strerror or exc}).") from exc
    return path


def declared_seconds(path: str | Path) -> float | None:
    """How long a file says it is (its header), or None when it does not say (see :func:`check_file`
    first)."""
    return _declared_seconds(Path(path))


def stream_file(path: str | Path, channel: str = "mix", block_s: float = 30.0) -> Iterator[np.ndarray]:
    """Decode a file block by block (about ``block_s`` seconds each) to mono float32 at 16 kHz, so a
    recording of hours is never held in memory whole. Same checks and sentences as
    :func:`decode_file`, before the first block; a file that breaks later raises :class:`AudioError`
    where it breaks, after the blocks before it."""
    import av

    path = check_file(path, channel)
    # 16-bit, as decode_file's decoder converts: the same down-mix ((L + R) / 2), the same samples
    width = 1 if channel == "mix" else 2
    resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono" if width == 1 else "stereo",
                                                  rate=SAMPLE_RATE)
    want = int(block_s * SAMPLE_RATE)
    pending: list[np.ndarray] = []
    have = done = 0

    def mono(frame) -> np.ndarray:
        return downmix(frame.to_ndarray().reshape(-1, width).astype(np.float32) / 32768.0, channel)

    try:
        with av.open(str(path), mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise ValueError("no audio stream")
            frames = container.decode(audio=0)
            while True:
                try:
                    frame = next(frames)
                except StopIteration:
                    frame = None
                except av.error.InvalidDataError:  # a damaged packet: skip it, as decode_file does
                    continue
                for out in resampler.resample(frame):
                    block = mono(out)
                    pending.append(block)
                    have += block.size
                if have >= want or (frame is None and have):
                    audio = np.nan_to_num(np.concatenate(pending))
                    pending, have = [], 0
                    done += audio.size
                    yield audio
                if frame is None:
                    break
    except (av.error.FFmpegError, ValueError, IndexError) as exc:
        logger.exception("decoding %s failed after %.1f s", path, done / SAMPLE_RATE)
        where = f" after {done / SAMPLE_RATE:.0f} s" if done else ""
        raise AudioError(f"Could not read audio from {path}{where}: the file is corrupt or not in an audio "
                         "format Sotto understands.") from exc
    except OSError as exc:
        logger.exception("decoding %s failed", path)
        raise AudioError(f"Could not read {path} ({exc.strerror or exc}).") from exc
    if not done:
        raise AudioError(f"Could not read audio from {path}: the file is corrupt or not in an audio format Sotto "
                         "understands (no sound could be decoded from it).")
    declared = _declared_seconds(path)
    if declared is not None and declared - done / SAMPLE_RATE > max(0.5, 0.05 * declared):
        logger.warning("%s is cut off: %.1f s of %.1f s could be read; captioned what is there",
                       path, done / SAMPLE_RATE, declared)


def _check_truncation(path: Path, decoded_s: float) -> None:
    """Refuse a file cut off so early that next to nothing of it is left (e.g. the first kilobyte
    of a recording); log a cut-off file that still holds something to caption."""
    declared = _declared_seconds(path)
    if declared is None or declared - decoded_s <= max(0.5, 0.05 * declared):
        return
    if decoded_s < MIN_TRUNCATED_S:
        raise AudioError(
            f"The audio file {path} is cut off: its header promises {declared:.1f} s of audio, "
            f"but only {decoded_s:.2f} s could be read."
        )
    logger.warning("%s is cut off: %.1f s of %.1f s could be read; captioning what is there", path, decoded_s, declared)


def _declared_seconds(path: Path) -> float | None:
    """How long the file says it is (its header), or None when it does not say.

    FFmpeg clips a WAV file's length to what is on disk, so RIFF/WAVE headers are read here;
    for other formats the container's stated duration is used.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return _wav_declared_seconds(head)
    import av

    try:
        with av.open(str(path), metadata_errors="ignore") as container:
            duration = container.duration
    except (av.error.FFmpegError, OSError, ValueError):
        return None
    return duration / 1e6 if duration and duration > 0 else None


def _wav_declared_seconds(head: bytes) -> float | None:
    """The length a RIFF/WAVE header states (data chunk size / byte rate), or None."""
    pos, byte_rate = 12, 0
    while pos + 8 <= len(head):
        cid, size = head[pos:pos + 4], struct.unpack_from("<I", head, pos + 4)[0]
        if cid == b"fmt " and pos + 20 <= len(head):
            byte_rate = struct.unpack_from("<I", head, pos + 8 + 8)[0]
        elif cid == b"data":
            # 0 and 0xFFFFFFFF: a streaming writer that never went back to fill in the size
            if not byte_rate or size in (0, 0xFFFFFFFF):
                return None
            return size / byte_rate
        pos += 8 + size + (size & 1)
    return None

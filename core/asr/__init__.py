"""Streaming speech recognition."""

from .engine import ASREngine, FasterWhisperEngine, Hypothesis
from .streaming import StreamingOptions, StreamingTranscriber

__all__ = [
    "ASREngine",
    "FasterWhisperEngine",
    "Hypothesis",
    "StreamingOptions",
    "StreamingTranscriber",
]

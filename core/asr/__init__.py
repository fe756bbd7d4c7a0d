"""Streaming speech recognition."""

from .engine import ASREngine, FasterWhisperEngine, Hypothesis
from .streaming import StreamingTranscriber
from .types import CaptionUpdate, Sentence, StageTimings, StreamingOptions, Word

__all__ = [
    "ASREngine",
    "CaptionUpdate",
    "FasterWhisperEngine",
    "Hypothesis",
    "Sentence",
    "StageTimings",
    "StreamingOptions",
    "StreamingTranscriber",
    "Word",
]

"""Speculative Whisper decoding in PyTorch: a small drafter, a large verifier, lossless output."""

from .convert import convert_ct2_whisper, ensure_converted, read_ct2_model
from .decoder import DecodeResult, DecodeStats, SpeculativeDecoder, SpeculativeOptions, greedy_decode
from .runtime import DecoderState, WhisperRunner

__all__ = [
    "DecodeResult", "DecodeStats", "DecoderState", "SpeculativeDecoder", "SpeculativeOptions", "WhisperRunner",
    "convert_ct2_whisper", "ensure_converted", "greedy_decode", "read_ct2_model",
]

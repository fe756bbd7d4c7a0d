"""What is shown on screen, how steadily, and the files captions are saved to."""

from .metrics import ErasureMeter, normalize_english, normalized_erasure, tokenize, word_error_rate
from .policy import CaptionLine, CaptionPolicy, CaptionView, mask_tokens
from .subtitles import to_srt, to_vtt

__all__ = [
    "CaptionLine",
    "CaptionPolicy",
    "CaptionView",
    "ErasureMeter",
    "mask_tokens",
    "normalize_english",
    "normalized_erasure",
    "to_srt",
    "to_vtt",
    "tokenize",
    "word_error_rate",
]

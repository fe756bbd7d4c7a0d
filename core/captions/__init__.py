"""What is shown on screen, how steadily, and the files captions are saved to."""

from .metrics import ErasureMeter, normalize_english, normalized_erasure, word_error_rate
from .policy import CaptionPolicy, mask_tokens
from .subtitles import to_srt, to_vtt

__all__ = [
    "CaptionPolicy",
    "ErasureMeter",
    "mask_tokens",
    "normalize_english",
    "normalized_erasure",
    "to_srt",
    "to_vtt",
    "word_error_rate",
]

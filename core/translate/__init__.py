"""Live translation with a local GGUF model."""

from .streaming import StreamingTranslator, TranslationEngine
from .translator import LlamaTranslator, TranslationResult, TranslatorOptions

__all__ = [
    "LlamaTranslator",
    "StreamingTranslator",
    "TranslationResult",
    "TranslationEngine",
    "TranslatorOptions",
]

"""Live translation with a local GGUF model."""

from .prompts import CJK_LANGUAGES, LANGUAGE_NAMES, language_name
from .streaming import FrozenTranslation, StreamingTranslator, TranslationUpdate, Translator
from .translator import LlamaTranslator, TranslationResult, TranslatorOptions

__all__ = [
    "CJK_LANGUAGES",
    "LANGUAGE_NAMES",
    "FrozenTranslation",
    "LlamaTranslator",
    "StreamingTranslator",
    "TranslationResult",
    "TranslationUpdate",
    "Translator",
    "TranslatorOptions",
    "language_name",
]

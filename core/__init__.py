"""Sotto core: audio, voice activity, streaming ASR, translation, captions.

Nothing in this package imports Qt; everything here runs headless.
"""

import logging

from . import compute as _compute  # noqa: F401  (sets OpenMP waiting before any engine loads)
from .privacy import telemetry_off

telemetry_off()  # before any library that would phone home has loaded

__version__ = "0.1.0"

logger = logging.getLogger("sotto")
logger.addHandler(logging.NullHandler())

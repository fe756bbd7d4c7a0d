"""Logging setup: details go to a rotating log file, the terminal stays clean."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from . import logger
from .paths import log_dir

_configured: Path | None = None


def setup_logging(level: int = logging.INFO, console_level: int | None = None) -> Path:
    """Send the ``sotto`` logger to ``sotto.log`` (and optionally the console).

    Returns the log file's path, which error messages point users to.
    """
    global _configured
    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sotto.log"
    if _configured == path:
        return path
    # backslashreplace: a file name that is not valid UTF-8 (surrogate-escaped bytes) must not break logging.
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8",
                                                   errors="backslashreplace")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if console_level is not None:
        console = logging.StreamHandler()
        console.setLevel(console_level)
        console.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        logger.addHandler(console)
    logger.setLevel(min(level, console_level or level))
    _configured = path
    return path


def log_file() -> Path:
    """Path of the current log file (where details of errors are written)."""
    return _configured or (log_dir() / "sotto.log")

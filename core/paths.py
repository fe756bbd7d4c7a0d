"""Where Sotto keeps its files (platformdirs), with overrides for tests.

Environment variables override each location, so tests and CI never touch the
user's own directories:

- ``SOTTO_CONFIG_DIR``: settings (``settings.toml``)
- ``SOTTO_DATA_DIR``: caption history journals
- ``SOTTO_MODELS_DIR``: the model store
- ``SOTTO_LOG_DIR``: log files
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "sotto"


def _dir(env: str, default: str) -> Path:
    value = os.environ.get(env)
    path = Path(value).expanduser() if value else Path(default)
    return path


def config_dir() -> Path:
    """Directory holding ``settings.toml``."""
    return _dir("SOTTO_CONFIG_DIR", platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    """Directory holding caption history."""
    return _dir("SOTTO_DATA_DIR", platformdirs.user_data_dir(APP_NAME))


def models_dir() -> Path:
    """Root of the model store (a cache: everything in it can be re-made)."""
    return _dir("SOTTO_MODELS_DIR", os.path.join(platformdirs.user_cache_dir(APP_NAME), "models"))


def log_dir() -> Path:
    """Directory holding ``sotto.log``."""
    return _dir("SOTTO_LOG_DIR", platformdirs.user_log_dir(APP_NAME))


def project_root() -> Path:
    """The source checkout (used to find ``assets/`` and ``../shared/data``)."""
    return Path(__file__).resolve().parent.parent


def assets_dir() -> Path:
    """Bundled assets: the demo sample, icons, the desktop entry."""
    return project_root() / "assets"


def demo_sample() -> Path:
    """The bundled demo recording (JFK's inaugural address, public domain)."""
    return assets_dir() / "jfk.flac"

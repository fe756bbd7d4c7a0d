"""Where Sotto keeps its files (platformdirs), with overrides for tests.

Environment variables override each location, so tests and CI never touch the
user's own directories:

- ``SOTTO_CONFIG_DIR``: settings (``settings.toml``)
- ``SOTTO_DATA_DIR``: caption history journals
- ``SOTTO_MODELS_DIR``: the model store
- ``SOTTO_LOG_DIR``: log files

Files that must survive a crash whole (settings, model manifests, subtitles, summaries)
are written with :func:`write_atomic`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
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


def write_atomic(path: str | Path, data: str | bytes, encoding: str = "utf-8", errors: str = "strict") -> None:
    """Replace ``path`` with ``data`` so a crash (even ``kill -9`` or a power cut) leaves either
    the old file or the new one, never a torn or empty one.

    The data goes to a uniquely named temporary file in the same folder (so two writers never
    share one), is flushed to disk (fsync), takes over the old file's permissions, and is
    renamed over ``path`` (atomic on POSIX and Windows); the folder is then synced so the
    rename itself is durable. ``errors`` is the text encoding's error handler.
    """
    path = Path(path)
    if path.is_symlink():  # e.g. settings kept in a dotfiles repository: replace the file, keep the link
        path = path.resolve()
    payload = data.encode(encoding, errors) if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(OSError):  # keep a private file private
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: str | Path) -> None:
    """Make a rename or new file in ``directory`` durable (a no-op where folders cannot be synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

"""Errors that carry one plain sentence for the user.

Every failure a user can cause or meet (bad audio, a missing model, an unplugged
device) is raised as a :class:`SottoError` whose ``str()`` is a sentence fit to
show as is; the technical detail goes to the log file.
"""

from __future__ import annotations


class SottoError(Exception):
    """Base class: ``str(err)`` is a user-facing sentence."""


class SettingsError(SottoError):
    """A settings value or file is invalid."""


class AudioError(SottoError):
    """Audio could not be read or decoded."""


class AudioDeviceError(AudioError):
    """An audio input device is missing, busy or stopped delivering audio."""


class ModelError(SottoError):
    """A model is missing, corrupt or failed to load."""


class ModelNotFoundError(ModelError):
    """A model is not in the store and no source can provide it offline."""


class DownloadError(ModelError):
    """A download failed (network, cut off, or checksum mismatch)."""


class DownloadCancelled(DownloadError):
    """The user cancelled a download; the partial file is kept for resuming."""


class TranslationError(SottoError):
    """The translator failed; captions continue without translation."""


class Interrupted(SottoError):
    """Work was stopped on request (not a failure; nothing is reported)."""

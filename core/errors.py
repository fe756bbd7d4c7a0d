"""Errors that carry one plain sentence for the user.

Every failure a user can cause or meet (bad audio, a missing model, an unplugged
device) is raised as a :class:`SottoError` whose ``str()`` is a sentence fit to
show as is; the technical detail goes to the log file.
"""

from __future__ import annotations

from collections.abc import Iterable


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


class ModelMemoryError(ModelError):
    """There was not enough memory to load a model (the sentence suggests a smaller one)."""


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


# What the libraries say when an allocation fails: numpy/pybind11 raise MemoryError, CTranslate2
# "mkl_malloc: failed to allocate memory", llama.cpp logs "insufficient memory" / "failed to
# allocate buffer" and raises ValueError("Failed to create llama_context"), the OS says ENOMEM.
_MEMORY_WORDS = ("out of memory", "insufficient memory", "cannot allocate memory", "failed to allocate",
                 "unable to allocate", "bad_alloc", "mkl_malloc", "enomem")


def out_of_memory(exc: BaseException, details: Iterable[str] = ()) -> bool:
    """True when ``exc`` (or what caused it, or a library's log lines ``details``) says memory ran out."""
    texts = list(details)
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MemoryError):
            return True
        texts.append(str(seen))
        seen = seen.__cause__ or seen.__context__
    text = " ".join(texts).lower()
    return any(word in text for word in _MEMORY_WORDS)

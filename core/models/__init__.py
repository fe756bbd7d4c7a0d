"""Model management: catalogue, store, downloads."""

from .download import DownloadProgress, download_file, sha256_file
from .registry import MODELS, ModelFile, ModelSpec, get_spec
from .store import ModelStatus, ModelStore, human_size

__all__ = [
    "MODELS",
    "DownloadProgress",
    "ModelFile",
    "ModelSpec",
    "ModelStatus",
    "ModelStore",
    "download_file",
    "get_spec",
    "human_size",
    "sha256_file",
]

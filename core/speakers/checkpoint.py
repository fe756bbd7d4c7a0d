"""Read the tensors of a PyTorch checkpoint in the legacy (pre-1.6, non-zip) format without PyTorch.

Resemblyzer's ``pretrained.pt`` is such a file, and the installers carry no PyTorch. The format is a
run of pickles: a magic number, the protocol version, system info, the object itself (whose tensors
refer to storages by key through pickle's persistent ids), the list of storage keys in file order;
then each storage's raw little-endian data, prefixed by its element count (int64). Only the classes
a tensor checkpoint needs are let out of the pickle: anything else is refused, so reading a file
never runs its code.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_MAGIC = 0x1950A86A20F9469CFC6C
_PROTOCOL = 1001
_STORAGES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class CheckpointError(ValueError):
    """The file is not a legacy PyTorch tensor checkpoint this reader understands."""


@dataclass
class _StorageType:
    dtype: type


@dataclass
class _Tensor:
    key: str
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(storage, offset, size, stride, *_rest):
    return _Tensor(storage, int(offset), tuple(size), tuple(stride))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, storages: dict[str, type]):
        super().__init__(file)
        self._storages = storages

    def find_class(self, module, name):
        if module == "torch" and name in _STORAGES:
            return _StorageType(_STORAGES[name])
        if module == "torch._utils" and name in ("_rebuild_tensor", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        raise CheckpointError(f"unexpected class {module}.{name}")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise CheckpointError("unexpected persistent id")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, _StorageType):
            raise CheckpointError("unexpected storage type")
        self._storages[key] = storage_type.dtype
        return key


def read_legacy_checkpoint(path: Path) -> dict:
    """The checkpoint's object with every tensor as a numpy array. Raises :class:`CheckpointError`
    (or ``OSError``) when the file is not one."""
    data = Path(path).read_bytes()
    f = io.BytesIO(data)
    try:
        if pickle.load(f) != _MAGIC or pickle.load(f) != _PROTOCOL:
            raise CheckpointError("not a legacy PyTorch checkpoint")
        pickle.load(f)  # system info (little-endian, type sizes)
        dtypes: dict[str, type] = {}
        obj = _Unpickler(f, dtypes).load()
        keys = pickle.load(f)
        arrays: dict[str, np.ndarray] = {}
        pos = f.tell()
        for key in keys:
            dtype = np.dtype(dtypes[str(key)])
            (count,) = struct.unpack_from("<q", data, pos)
            pos += 8
            end = pos + count * dtype.itemsize
            if count < 0 or end > len(data):
                raise CheckpointError("truncated storage")
            arrays[str(key)] = np.frombuffer(data, dtype=dtype, count=count, offset=pos)
            pos = end
    except (pickle.UnpicklingError, EOFError, struct.error, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(str(exc) or type(exc).__name__) from exc
    return _materialise(obj, arrays)


def _materialise(obj, arrays: dict[str, np.ndarray]):
    if isinstance(obj, _Tensor):
        storage = arrays[obj.key]
        item = storage.itemsize
        need = obj.offset + sum((s - 1) * st for s, st in zip(obj.size, obj.stride, strict=True)) + 1
        if obj.size and (min(obj.size) > 0 and need > len(storage)):
            raise CheckpointError("a tensor runs past its storage")
        view = np.lib.stride_tricks.as_strided(storage[obj.offset:], obj.size, tuple(s * item for s in obj.stride))
        return np.array(view)
    if isinstance(obj, dict):
        return {k: _materialise(v, arrays) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_materialise(v, arrays) for v in obj)
    return obj

"""One compute gate for all models on the CPU.

On a small CPU, running the speech model and the translator at the same time
with all cores each oversubscribes it, and a speech decode beside a translation
takes several times as long. Engines therefore take :data:`COMPUTE_GATE` around each model call: one model computes
at a time with every core, and the other waits (a condition, never a sleep).

Speech comes first: a waiting speech decode goes before a waiting partial
translation, and a partial translation in progress steps aside between two tokens
when a speech decode is waiting (:meth:`ComputeGate.yield_to_speech`), so it never
delays what the user sees first. The final translation of a finished sentence
takes the gate at speech priority and is not interrupted: it is what the user
waits for next, and it is never dropped.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import mmap
import os
import platform
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# How idle threads wait (read by each library when it loads, so set before numpy, CTranslate2 and
# llama.cpp load: ``core`` imports this module first; a variable already set wins). The models take
# turns at the gate, so what their threads do between calls is paid by the next model
# (`sotto bench threads`, docs/BENCHMARKS.md):
# - numpy's OpenBLAS keeps its other threads spinning after a matrix product, however small (the mel
#   filterbank that starts every Whisper decode), for 2^28 cycles, taking a core from the decode
#   itself. A timeout of 2^4 cycles puts them to sleep at once and keeps their number, so the features
#   stay the same bit for bit (one BLAS thread would round the filterbank differently, and Whisper's
#   int8 decoding changes words on such 1-ulp differences).
# - OpenMP threads that sleep at once pay a wake-up for each of a decoder step's many small parallel
#   regions; a brief spin (GOMP_SPINCOUNT iterations, a fraction of a millisecond, where ACTIVE alone
#   would spin for ever) avoids it and leaves no thread spinning after the calls.
# KMP_BLOCKTIME is the same knob for Intel's OpenMP runtime.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
os.environ.setdefault("GOMP_SPINCOUNT", "10000")
os.environ.setdefault("KMP_BLOCKTIME", "0")

SPEECH, TRANSLATION = 0, 1  # priorities: lower goes first (a finished sentence's translation: SPEECH)


class ComputeGate:
    """One model computes at a time; among those waiting, speech goes first.

    ``with gate:`` holds it for speech; ``with gate.held(TRANSLATION):`` for a translation,
    which calls :meth:`yield_to_speech` between tokens.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._waiting = [0, 0]  # callers waiting, per priority

    def acquire(self, priority: int = SPEECH) -> None:
        """Wait until free and no caller of a higher priority waits; then hold the gate."""
        with self._cond:
            self._waiting[priority] += 1
            try:
                self._cond.wait_for(lambda: not self._busy and not any(self._waiting[:priority]))
            finally:
                self._waiting[priority] -= 1
            self._busy = True

    def release(self) -> None:
        """Let the next caller in."""
        with self._cond:
            self._busy = False
            self._cond.notify_all()

    def __enter__(self) -> ComputeGate:
        self.acquire(SPEECH)
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    @contextmanager
    def held(self, priority: int) -> Iterator[ComputeGate]:
        """Hold the gate at ``priority`` for the ``with`` block."""
        self.acquire(priority)
        try:
            yield self
        finally:
            self.release()

    @property
    def speech_waiting(self) -> bool:
        """True while a speech decode waits for the gate."""
        return self._waiting[SPEECH] > 0

    def yield_to_speech(self, priority: int = TRANSLATION) -> float:
        """Called by the holder between two steps: if a speech decode waits, let it run and take
        the gate back afterwards. Returns the seconds spent waiting (0 when nobody waited)."""
        if not self._waiting[SPEECH]:  # a racy read is fine: the next step looks again
            return 0.0
        t0 = time.perf_counter()
        self.release()
        self.acquire(priority)
        return time.perf_counter() - t0


COMPUTE_GATE = ComputeGate()


def cuda_available() -> bool:
    """True when CTranslate2 sees a CUDA device and can run on it (the speech models can run there)."""
    return ct2_cuda_problem() is None


@functools.cache
def ct2_cuda_libraries() -> tuple[str, ...]:
    """The CUDA libraries CTranslate2 loads when it first computes on a GPU, by file name, as its
    own binary names them (PyPI's CTranslate2 4.x for Linux: ``libcublas.so.12``; Windows:
    ``cublas64_12.dll``). They are not linked: a GPU and its driver are found without them, and
    a decode fails without them."""
    import ctranslate2

    folder = Path(ctranslate2.__file__).parent
    binaries = [p for d in (folder, folder.parent / "ctranslate2.libs") if d.is_dir() for p in d.iterdir()
                if p.suffix in (".so", ".dll") or ".so." in p.name]
    found: set[str] = set()
    for binary in binaries:
        try:
            with open(binary, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                for prefix, suffix in ((b"libcublas.so.", b""), (b"cublas64_", b".dll")):
                    at = data.find(prefix)
                    while at >= 0:
                        m = re.match(rb"\d+", data[at + len(prefix):at + len(prefix) + 4])
                        if m and data[at + len(prefix) + m.end():].startswith(suffix):
                            found.add((prefix + m.group() + suffix).decode())
                        at = data.find(prefix, at + 1)
        except (OSError, ValueError):
            continue
    return tuple(sorted(found))


def pip_cuda_library_dirs(paths: list[str] | None = None) -> list[Path]:
    """The folders of NVIDIA's cuBLAS wheels (``pip install nvidia-cublas-cu12``) in this Python's
    environment (``sys.path``, or ``paths``): ``nvidia/cublas/lib`` (Linux), ``nvidia/cublas/bin`` (Windows)."""
    found = []
    for entry in sys.path if paths is None else paths:
        for sub in ("lib", "bin"):
            folder = Path(entry or ".") / "nvidia" / "cublas" / sub
            if folder.is_dir() and folder not in found:
                found.append(folder)
    return found


def preload_cuda_libraries(names: tuple[str, ...], folders: list[Path] | None = None) -> list[Path]:
    """Load those of ``names`` that sit in NVIDIA's pip folders (:func:`pip_cuda_library_dirs`) now,
    globally, so CTranslate2's own later ``dlopen("libcublas.so.12")`` finds the library already loaded
    (the loader matches a loaded library by its soname) with no ``LD_LIBRARY_PATH`` set: installing
    ``nvidia-cublas-cu12`` into Sotto's environment is enough. cuBLAS's companion (``libcublasLt``,
    ``cublasLt64_N.dll``) of the same folder is loaded first. Windows: the folder is added to the DLL
    search path (``os.add_dll_directory``; written against the documented API, not run here).
    Returns the files loaded; a file that fails to load is left to :func:`missing_libraries` to report."""
    import ctypes

    loaded: list[Path] = []
    for folder in pip_cuda_library_dirs() if folders is None else folders:
        wanted = [folder / n for n in names if (folder / n).is_file()]
        if not wanted:
            continue
        if os.name == "nt":
            with contextlib.suppress(OSError, AttributeError):
                os.add_dll_directory(str(folder))
        for path in wanted:
            companion = path.with_name(path.name.replace("cublas", "cublasLt", 1))
            for file in ((companion, path) if companion.is_file() else (path,)):
                if file in loaded:
                    continue
                try:
                    ctypes.CDLL(str(file), mode=getattr(ctypes, "RTLD_GLOBAL", 0))
                except OSError as exc:
                    logging.getLogger("sotto").warning("could not load %s: %s", file, exc)
                    break
                loaded.append(file)
    return loaded


def missing_libraries(names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` the dynamic loader cannot load here."""
    import ctypes

    missing = []
    for name in names:
        try:
            ctypes.CDLL(name)
        except OSError:
            missing.append(name)
    return missing


NO_CUDA_GPU = "CTranslate2 sees no CUDA GPU on this machine."


@functools.cache
def ct2_cuda_problem() -> str | None:
    """None when CTranslate2 can run the speech models on a CUDA GPU here; else one sentence why not.

    Seen on an NVIDIA H200 with CUDA 13 alone (driver 580, cuBLAS 13): CTranslate2 4.8.5 counts the GPU
    and lists float16, yet its first encoder pass fails with "Library libcublas.so.12 is not found or
    cannot be loaded"; so a GPU counts only where the libraries its binary names load."""
    try:
        import ctranslate2

        count = ctranslate2.get_cuda_device_count()
    except Exception as exc:  # a broken CUDA install: a sentence, not a crash
        return f"CTranslate2 cannot query CUDA here ({exc})."
    if count <= 0:
        return NO_CUDA_GPU
    names = ct2_cuda_libraries()
    if missing_libraries(names):
        preload_cuda_libraries(names)  # cuBLAS from NVIDIA's pip wheel, where it is installed
    missing = missing_libraries(names)
    if missing:
        found = re.search(r"(\d+)(?:\.dll)?$", missing[0])
        major = found.group(1) if found else "12"  # the names looked for all end in the CUDA major version
        path = "PATH" if os.name == "nt" else "LD_LIBRARY_PATH"
        return (f"An NVIDIA GPU is here, but CTranslate2 needs {', '.join(missing)} (CUDA {major}'s cuBLAS), "
                f"which is not installed: install CUDA {major}'s cuBLAS (`bash packaging/setup.sh` does, or "
                f"`pip install nvidia-cublas-cu{major}` in Sotto's environment, or add its folder to {path}), "
                f"or keep the speech models on the CPU.")
    return None


# -- PyTorch devices and precisions (the speculative speech engine) -----------------------------
TORCH_DTYPES = ("float32", "float16", "bfloat16")


def torch_device(requested: str = "auto") -> str:
    """The PyTorch device for ``requested`` (``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``):
    ``auto`` takes CUDA, then Apple's Metal (MPS), then the CPU; a named device is kept as named."""
    if requested != "auto":
        return requested
    try:
        import torch
    except ImportError:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def ct2_compute_type(requested: str, device: str) -> str:
    """The CTranslate2 compute type of the faster-whisper engine for ``asr.compute_dtype``.

    ``auto`` is int8 on a CPU that CTranslate2 runs int8 on (weights int8, activations float32),
    float16 on CUDA: int8 decodes faster than float32 on a CPU and hears the shared clips about as
    well. An explicit type this machine cannot run is refused with a sentence that says which it can.
    """
    import ctranslate2

    kind = "cuda" if device.split(":")[0] == "cuda" else "cpu"
    supported = ctranslate2.get_supported_compute_types(kind)
    if requested == "auto":
        if kind == "cuda":
            return "float16" if "float16" in supported else "float32"
        return "int8" if "int8" in supported else "float32"
    if requested not in supported:
        raise ValueError(f"This machine's {'GPU' if kind == 'cuda' else 'CPU'} cannot run the speech model in "
                         f"{requested}; set asr.compute_dtype to auto or one of {', '.join(sorted(supported))}.")
    return requested


def torch_dtype_name(requested: str, device: str) -> str:
    """The precision for ``requested`` (``auto`` or one of :data:`TORCH_DTYPES`; ``int8``, which is
    for the faster-whisper engine, counts as ``auto``) on ``device``.

    ``auto`` is float32 on the CPU: only float32 is exactly the verifier's greedy output, the
    int8 drafter needs it, and half precision is fast on a CPU only with bfloat16 instructions
    (AVX512-BF16, AMX), which many lack. On CUDA and MPS it is float16: Whisper was trained and is shipped
    for float16 inference (its activations stay in range), every CUDA GPU with tensor cores and
    every Apple GPU runs it natively, while bfloat16 needs an Ampere-or-later GPU (macOS 14 for
    MPS); and float16 keeps 3 more mantissa bits than bfloat16, so batched and one-token passes
    round apart less (fewer near-tie flips; see the losslessness contract in
    core/asr/speculative/engine.py)."""
    if requested == "int8":  # a faster-whisper precision: the speculative engine's drafter is int8 already
        requested = "auto"
    if requested != "auto":
        if requested not in TORCH_DTYPES:
            raise ValueError(f"unknown precision {requested!r} (auto, {', '.join(TORCH_DTYPES)})")
        return requested
    return "float32" if device.split(":")[0] == "cpu" else "float16"


def compute_devices() -> list[str]:
    """What this machine offers the speech models, one line each (for ``sotto devices``)."""
    lines = [f"CPU: {os.cpu_count()} cores"]
    try:
        import ctranslate2

        cuda = ctranslate2.get_cuda_device_count()
        problem = ct2_cuda_problem() if cuda else None
        usable = bool(cuda) and problem is None
        lines.append(f"CTranslate2 (faster-whisper): {f'{cuda} CUDA device(s)' if usable else 'CPU only'}; "
                     f"compute_dtype auto = {ct2_compute_type('auto', 'cuda' if usable else 'cpu')}"
                     + (f". {problem}" if problem else ""))
    except Exception as exc:  # a broken CUDA install is a line here, not a crash
        lines.append(f"CTranslate2 (faster-whisper): not usable ({exc})")
    try:
        import torch
    except ImportError:
        lines.append("PyTorch (speculative engine): not installed")
        return lines
    found = []
    try:
        for i in range(torch.cuda.device_count() if torch.cuda.is_available() else 0):
            major, minor = torch.cuda.get_device_capability(i)
            bf16 = ", bfloat16" if major >= 8 else ""
            found.append(f"cuda:{i} {torch.cuda.get_device_name(i)} (compute {major}.{minor}: float16{bf16})")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            found.append("mps (Apple GPU: float16)")
    except Exception as exc:
        found.append(f"GPU query failed ({exc})")
    chosen = torch_device("auto")
    lines.append(f"PyTorch {torch.__version__} (speculative engine): {', '.join(found) or 'no GPU'}; "
                 f"compute_device auto = {chosen}, compute_dtype auto = {torch_dtype_name('auto', chosen)}")
    return lines


def cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo`` where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"

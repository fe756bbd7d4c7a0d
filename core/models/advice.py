"""Which translation model suits this machine: memory, accelerator and measured speed.

A bigger model translates better but must keep up with speech: a finished sentence of about
30 output tokens (plus its prompt) should be on screen within about two seconds, which needs an
effective speed of :data:`LIVE_TOKENS_PER_S` (output tokens per second of model time, prompt
included). The bundled model's speed is measured on this machine (``sotto models advise``, or read
back from earlier sessions); a bigger one's is measured with a random-weight proxy of its shape
(:mod:`core.translate.proxy`, stored per machine by :func:`record_proxy_speeds`), and where none was
measured here it is the bundled model's scaled by parameter count; without any measurement speeds
are estimated from the core count. The advice is the largest model that fits in memory and is
expected to keep up; the bundled 270M is the fallback that always works.
:func:`model_note` says it to the user with the first translation of a session.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import logger
from ..compute import cpu_name
from ..paths import data_dir, write_atomic

LIVE_TOKENS_PER_S = 15.0
BUNDLED = "gemma-3-270m"
# catalogue name, parameters (billions), languages it translates well, in the order advised (best first).
# No machine here can download them to compare their translations, so the order is their makers' published
# evaluations and size: the models made for translation (TranslateGemma, WMT24++ over 55 languages; Hy-MT2,
# FLORES-200 EN<>XX) before the general instruct models, and among those the bigger one first.
CANDIDATES: tuple[tuple[str, float, str], ...] = (
    ("translategemma-4b", 3.88, "55 languages, among them German, French, Spanish, Japanese, Chinese, Korean"),
    ("hy-mt2-1.8b", 1.79, "33 languages, among them German, French, Spanish, Japanese, Chinese, Korean"),
    ("qwen2.5-3b-instruct", 3.09, "29 languages, among them German, French, Spanish, Japanese, Chinese, Korean"),
    ("eurollm-1.7b-instruct", 1.66, "the 24 EU languages, and Chinese, Japanese, Korean, Russian and 7 more"),
    ("qwen2.5-1.5b-instruct", 1.54, "29 languages; good German, French, Spanish and Chinese, fair Japanese"),
    (BUNDLED, 0.27, "German, French and Spanish readable; Japanese and Chinese rough"),
)
_PARAMS = {name: params for name, params, _ in CANDIDATES}
# effective tokens per second of the bundled model per CPU core, when nothing was measured (the
# 2-core x86_64 of docs/BENCHMARKS.md: 21.5 output tokens/s re-translating from scratch)
_BUNDLED_TPS_PER_CORE = 10.0
_GPU_SPEEDUP = 8.0  # a 1.5–3B Q4 model on a GPU with full offload, against the CPU (a guess: not measured)
_APP_RESERVE = 1.5e9  # speech models, the app and the audio buffers
_OS_RESERVE = 3.0e9  # the operating system and the user's other programs (a meeting client, a browser)


@dataclass(frozen=True)
class Machine:
    """What the advice depends on."""

    memory_bytes: int
    cores: int
    accelerator: str | None = None  # e.g. "CUDA", "Apple Silicon (Metal)"; only one llama.cpp can use
    bundled_tokens_per_s: float | None = None  # measured here with the bundled model
    proxy_tokens_per_s: dict[str, float] = field(default_factory=dict)  # measured here with random-weight proxies


@dataclass(frozen=True)
class Advice:
    """The model to use, and why, in one sentence."""

    model: str
    reason: str
    languages: str
    estimated_tokens_per_s: float
    measured: bool


def total_memory() -> int:
    """Physical memory in bytes (0 if it cannot be read)."""
    try:
        if os.name == "nt":  # GlobalMemoryStatusEx (not run here: written against the Win32 API)
            import ctypes

            class _Status(ctypes.Structure):
                _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                            ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                            ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                            ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                            ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

            status = _Status()
            status.dwLength = ctypes.sizeof(_Status)
            ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status))  # type: ignore[attr-defined]
            return int(status.ullTotalPhys)
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (OSError, ValueError, AttributeError):
        return 0


def translation_accelerator() -> str | None:
    """The GPU llama.cpp can use for translation here, if its build supports offloading."""
    try:
        import llama_cpp

        if not llama_cpp.llama_supports_gpu_offload():
            return None
    except Exception:  # not installed or a broken build: the CPU it is
        return None
    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return "Apple Silicon (Metal)"
    from ..compute import cuda_available

    return "CUDA" if cuda_available() else "a GPU"


def _speed_file() -> Path:
    return data_dir() / "translation-speed.json"


def measured_speeds() -> dict[str, float]:
    """Effective output tokens per second per model, as measured on this machine."""
    try:
        data = json.loads(_speed_file().read_text(encoding="utf-8"))
        return {str(k): float(v["tokens_per_s"]) for k, v in data.items() if float(v["tokens_per_s"]) > 0}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def record_speed(model: str, tokens: int, seconds: float) -> None:
    """Remember the speed ``model`` showed here (ignored for fewer than 30 tokens: too noisy)."""
    if tokens < 30 or seconds <= 0:
        return
    path = _speed_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[model] = {"tokens_per_s": round(tokens / seconds, 2), "tokens": tokens, "date": time.strftime("%Y-%m-%d")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1))
    except OSError as exc:  # a read-only or full disk costs the advice its measurement, nothing else
        logger.warning("could not record the translation speed: %s", exc)


# how a speed is known, in words
BY_PROXY = "measured with a random-weight proxy of its shape"
BY_SCALING = "an estimate: the bundled model's measured speed scaled by parameter count"
BY_CORES = "estimated from the core count"
PROXY_VERSION = 1  # of the stored proxy speeds: another version is not read


def _proxy_file() -> Path:
    return data_dir() / "translator-proxy-speed.json"


def _machine_id() -> dict[str, object]:
    """What a stored proxy speed must match to count here: the processor, its cores and the GPU."""
    return {"cpu": cpu_name(), "cores": os.cpu_count() or 1, "accelerator": translation_accelerator()}


def record_proxy_speeds(speeds: dict[str, dict]) -> None:
    """Store proxy speeds for this machine (model → a record with ``tokens_per_s``), beside those of
    other models measured before; those of another machine are dropped."""
    path = _proxy_file()
    here = _machine_id()
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or data.get("machine") != here or data.get("version") != PROXY_VERSION:
        data = {"version": PROXY_VERSION, "machine": here, "models": {}}
    date = time.strftime("%Y-%m-%d")
    data["models"].update({name: {**record, "date": date} for name, record in speeds.items()})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(data, indent=1))
    except OSError as exc:  # a read-only or full disk costs the advice its measurement, nothing else
        logger.warning("could not record the translators' proxy speeds: %s", exc)


def proxy_records() -> dict[str, dict]:
    """The proxy speeds stored for this machine (model → record: ``tokens_per_s``, ``date``, …); none
    where they were measured on another machine or the file is damaged."""
    try:
        data = json.loads(_proxy_file().read_text(encoding="utf-8"))
        if data.get("version") != PROXY_VERSION or data.get("machine") != _machine_id():
            return {}
        return {str(k): dict(v) for k, v in data["models"].items() if float(v["tokens_per_s"]) > 0}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def this_machine() -> Machine:
    """Memory, cores, the accelerator and the measured speeds here (bundled model, proxies)."""
    return Machine(total_memory(), os.cpu_count() or 1, translation_accelerator(),
                   measured_speeds().get(BUNDLED),
                   {name: float(r["tokens_per_s"]) for name, r in proxy_records().items()})


def rate(tokens_per_s: float) -> str:
    """A speed in words' precision: one decimal below 10 tokens/s ("1.4"), none above ("21")."""
    return f"{tokens_per_s:.1f}" if tokens_per_s < 10 else f"{tokens_per_s:.0f}"


def speed_basis(model: str, machine: Machine) -> str:
    """How :func:`estimated_speed` knows ``model``'s speed here, in words."""
    if model in machine.proxy_tokens_per_s:
        return BY_PROXY
    if machine.bundled_tokens_per_s is None:
        return BY_CORES
    return "measured" if model == BUNDLED else BY_SCALING


def estimated_speed(model: str, machine: Machine) -> tuple[float, bool]:
    """Expected effective tokens per second of ``model`` here, and whether it rests on a measurement."""
    if model in machine.proxy_tokens_per_s:  # timed as the app runs it (GPU layers included)
        return machine.proxy_tokens_per_s[model], True
    measured = machine.bundled_tokens_per_s is not None
    bundled = machine.bundled_tokens_per_s if measured else _BUNDLED_TPS_PER_CORE * machine.cores
    assert bundled is not None
    # generation is bound by reading the weights: speed falls with the parameter count
    tps = bundled * _PARAMS[BUNDLED] / _PARAMS.get(model, _PARAMS[BUNDLED])
    if machine.accelerator and model != BUNDLED:
        tps *= _GPU_SPEEDUP
    return tps, measured


def recommend(machine: Machine, sizes: dict[str, int]) -> Advice:
    """The largest candidate that fits in memory and keeps up; ``sizes``: download size of each."""
    budget = machine.memory_bytes - _OS_RESERVE - _APP_RESERVE
    why_not: list[str] = []
    for name, _params, languages in CANDIDATES:
        tps, measured = estimated_speed(name, machine)
        if name == BUNDLED:
            reason = ("The bundled model, because " + "; ".join(why_not) + "." if why_not
                      else "The bundled model works everywhere.")
            return Advice(name, reason, languages, tps, measured)
        need = sizes.get(name, 0) * 1.25  # weights plus context and compute buffers
        if machine.memory_bytes and need > budget:
            why_not.append(f"{name} needs about {need / 1e9:.1f} GB of the "
                           f"{max(budget, 0) / 1e9:.1f} GB this machine has to spare")
            continue
        how = speed_basis(name, machine)
        if machine.accelerator and how != BY_PROXY:
            how += f", and a guessed {_GPU_SPEEDUP:g}× for the GPU"
        if tps < LIVE_TOKENS_PER_S:
            why_not.append(f"{name} would translate only about {rate(tps)} tokens/s here ({how}; live captions "
                           f"need {LIVE_TOKENS_PER_S:.0f})")
            continue
        where = f"on {machine.accelerator}" if machine.accelerator else f"on {machine.cores} CPU cores"
        return Advice(name, f"{name} fits in memory and should translate roughly {rate(tps)} tokens/s {where} "
                            f"({how}; live captions need {LIVE_TOKENS_PER_S:.0f}).", languages, tps, measured)
    raise AssertionError("the bundled model is always a candidate")


def speed_notes(machine: Machine | None = None) -> dict[str, str]:
    """Each candidate's expected speed here in a few words (model → note), for beside the model."""
    machine = machine or this_machine()
    notes = {}
    for name, _params, _languages in CANDIDATES:
        tps, _ = estimated_speed(name, machine)
        basis = speed_basis(name, machine)
        if machine.accelerator and name != BUNDLED and basis != BY_PROXY:
            basis += f", and a guessed {_GPU_SPEEDUP:g}× for the GPU"
        if tps >= LIVE_TOKENS_PER_S:
            verdict = "keeps up"
        elif name == BUNDLED:  # used all the same: no smaller translator exists, and captions never wait for it
            verdict = "slower than live captions want: finished lines' translations come later"
        else:
            verdict = "too slow for live captions"
        notes[name] = f"about {rate(tps)} tokens/s here, {verdict} ({basis})"
    return notes


def catalogue_sizes() -> dict[str, int]:
    """Download size of each candidate, from the catalogue."""
    from .registry import get_spec

    return {name: spec.approx_size for name, _, _ in CANDIDATES if (spec := get_spec(name)) is not None}


def advise(machine: Machine | None = None) -> Advice:
    """The advice for this machine (or ``machine``), from what was measured so far."""
    return recommend(machine or this_machine(), catalogue_sizes())


def model_note(model: str) -> str:
    """What the first translation of a session says about its model (and a better one, where advised)."""
    if model.lower().endswith(".gguf"):  # a local file: its name
        model = Path(model).name
    note = f"Translations by {model}."
    if model == BUNDLED:
        try:
            advised = advise().model
        except Exception:  # advice is a courtesy
            logger.exception("model advice failed")
            advised = BUNDLED
        note = f"Translations by {model}, the small bundled model" + (
            f"; {advised} translates better on this machine (Settings › Models)." if advised != BUNDLED else ".")
    return note

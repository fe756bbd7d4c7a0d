"""Device-aware calibration of the speculative decoder (after UNISPEC's idea).

How long a draft should be depends on the machine: on a CPU a verifier pass
grows with the number of tokens it checks, on a GPU it barely does; the
drafter's step time sets what a rejected token costs. On first use on a
machine the engine measures, on the bundled demo recording, the drafter's
step time, the verifier's pass time against draft length, and the decoder
time of whole decodes for a grid of confidence thresholds and longest drafts;
it keeps the fastest pair. The result is stored per machine and model pair in
the data directory, and ``sotto bench asr`` shows it.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ... import logger
from ...paths import data_dir
from .decoder import SpeculativeDecoder, SpeculativeOptions
from .runtime import WhisperRunner

THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6)
MAX_DRAFTS = (8, 16, 24)
CALIBRATION_VERSION = 4  # 4: with the lazy drafter's length


@dataclass
class Calibration:
    """What was measured on this machine and the knobs chosen from it."""

    machine: str
    drafter: str
    verifier: str
    threshold: float
    max_draft: int
    drafter_step_ms: float
    verifier_pass_ms: dict[str, float]  # draft length → ms per verifier pass
    decoder_ms: dict[str, float] = field(default_factory=dict)  # "threshold/max_draft" → ms per decode
    drafter_encoder_ms: float = 0.0
    lazy_drafter: int = 8  # verifier-alone tokens that cost what starting the drafter (its encoder) costs
    version: int = CALIBRATION_VERSION


def machine_key() -> str:
    """What makes timings comparable: CPU model, core count, platform and torch version."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mps = getattr(torch.backends, "mps", None)
    device = (torch.cuda.get_device_name(0) if torch.cuda.is_available()
              else "mps" if mps is not None and mps.is_available() else "cpu")
    return f"{cpu} | {os.cpu_count()} cores | {device} | torch {torch.__version__}"


def _store() -> Path:
    return data_dir() / "speculative-calibration.json"


def load_calibration(drafter: str, verifier: str, path: Path | None = None) -> Calibration | None:
    """The stored calibration for this machine and model pair, if any."""
    path = path or _store()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    key = f"{machine_key()} | {drafter} -> {verifier}"
    raw = entries.get(key)
    if not raw or raw.get("version") != CALIBRATION_VERSION:
        return None
    return Calibration(**raw)


def save_calibration(cal: Calibration, path: Path | None = None) -> Path:
    """Store ``cal`` (other machines' and pairs' entries are kept)."""
    path = path or _store()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        entries = {}
    entries[f"{cal.machine} | {cal.drafter} -> {cal.verifier}"] = asdict(cal)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def runner_label(runner: WhisperRunner) -> str:
    """A model's name in the store's keys: its precision, device and how much its encoder reads
    make other timings (the lazy drafter's length is an encoder pass in verifier passes)."""
    encoder = "" if runner.encoder_frames is None else f", encoder {runner.encoder_seconds:g} s"
    if runner.dtype_name == "float32" and runner.device.type == "cpu":
        return runner.name + (f" ({encoder[2:]})" if encoder else "")  # keys from before devices were settings
    return f"{runner.name} ({runner.device.type}, {runner.dtype_name}{encoder})"


def best_ms(fn, repeat: int = 3) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in milliseconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 1000 * best


def calibrate(drafter: WhisperRunner, verifier: WhisperRunner, audio: np.ndarray) -> Calibration:
    """Measure on ``audio`` and pick the threshold and longest draft with the least decoder time.

    The lazy drafter's length is the drafter's encoder time in one-token verifier passes: below
    that many new tokens the verifier decoding alone is cheaper than starting the drafter. (The
    sparse tree stays a setting: on the demo its effect is within the grid's noise.)"""
    v_enc, d_enc = verifier.encode(audio), drafter.encode(audio)
    text = verifier.encode_text(" And so my fellow Americans ask not what your country can do for you ask what")
    prompt = verifier.prompt()
    passes: dict[str, float] = {}
    for k in (1, 4, 8, 16, 24, 32):
        state = verifier.start(v_enc)
        state.append(prompt)

        def one_pass(state=state, k=k) -> None:
            state.append((text * 2)[:k], logits_from=0)
            state.truncate(len(prompt))

        passes[str(k)] = round(best_ms(one_pass), 2)
    d_state = drafter.start(d_enc)
    d_state.append(drafter.prompt())
    d_tokens = drafter.encode_text(" And so my fellow Americans")

    def steps() -> None:
        for t in d_tokens:
            d_state.append([t])
        d_state.truncate(len(d_state) - len(d_tokens))

    step_ms = best_ms(steps) / len(d_tokens)
    encoder_ms = best_ms(lambda: drafter.encode(audio), repeat=2)
    lazy = max(0, min(32, round(encoder_ms / passes["1"])))
    decoder_ms: dict[str, float] = {}
    encoders = (v_enc, d_enc)
    for threshold in THRESHOLDS:
        for max_draft in MAX_DRAFTS:
            dec = SpeculativeDecoder(drafter, verifier, SpeculativeOptions(threshold=threshold, max_draft=max_draft))
            decoder_ms[f"{threshold}/{max_draft}"] = round(
                best_ms(lambda dec=dec: dec.decode(None, encoder_outputs=encoders), repeat=2), 1)
    best = min(decoder_ms, key=decoder_ms.get).split("/")
    threshold, max_draft = float(best[0]), int(best[1])
    cal = Calibration(machine_key(), runner_label(drafter), runner_label(verifier), threshold, max_draft,
                      round(step_ms, 2), passes, decoder_ms,
                      drafter_encoder_ms=round(encoder_ms, 1), lazy_drafter=lazy)
    logger.info("speculative calibration: threshold %s, longest draft %s, lazy drafter %d (%s)",
                threshold, max_draft, lazy, cal.machine)
    return cal


def calibrated(drafter: WhisperRunner, verifier: WhisperRunner, audio_path: Path) -> Calibration:
    """The stored calibration for this machine and pair, measuring (and storing) it the first time."""
    cal = load_calibration(runner_label(drafter), runner_label(verifier))
    if cal is not None:
        return cal
    from ...audio.decode import decode_file

    cal = calibrate(drafter, verifier, decode_file(audio_path))
    save_calibration(cal)
    return cal

"""The speculative speech engine on a GPU: lossless per precision, and how fast, against the verifier's greedy decoding.

For one device (``cuda``, ``mps``, or ``cpu`` to check the benchmark itself) and each
precision (float32, float16, bfloat16):

- **lossless**: every decode's tokens against that precision's verifier greedy output
  (one token per pass), offline on the shared clips and at every streaming update; each
  divergence is listed with the verifier's top-2 gap there and whether that is below the
  precision's near-tie tolerance (``core.asr.speculative.decoder.NEAR_TIES``), i.e. allowed
  by the losslessness contract, or a bug (float32 allows none: any divergence is a bug);
- **tree mask**: one tree pass (trunk + branch) against a plain pass over the trunk (the
  float32-mask bug of issue #13 gave NaN or logits off by up to 26 on CUDA);
- **speed**: decoder seconds of the verifier's greedy decoding against speculative decoding,
  offline (from scratch) and streaming (the window re-decoded every ``--step`` s, the previous
  update's transcript verified first, the lazy drafter as in the engine), encoders timed apart;
  ``--repeats`` timed runs after a warm-up run, median with the min–max spread.

The drafter is the engine's: on the CPU float32 with int8 linear layers, on a GPU the same
precision as the verifier. Weights come from the model store (``SOTTO_MODELS_DIR``), or from
transformers folders named by ``--drafter`` / ``--verifier``; a device machine cannot download,
so carry the models there (``bench/carry.py`` packs them, and the clips decoded for
``--audio``, in parts that fit a call).

Usage: python -m bench.gpu [--device cuda|mps|cpu] [--dtypes float32,float16,bfloat16]
                           [--quick] [--repeats N] [--step S] [--json FILE]
                           [--drafter DIR] [--verifier DIR] [--audio clips.npz]
(`sotto bench gpu …` runs the same where Sotto is set up; a device machine without it runs the
module as above.)
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
QUICK_OFFLINE = ("jfk.flac", "librispeech_1089-134686-0000.flac")
QUICK_STREAMING = ("jfk.flac",)


def _clips(quick: bool, audio_npz: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Offline: every shared ASR clip (their first 30 s); streaming: those not from LibriSpeech.
    With ``audio_npz`` the clips are those it holds (a device machine has no ../shared)."""
    if quick:
        return [SHARED / "asr" / c for c in QUICK_OFFLINE], [SHARED / "asr" / c for c in QUICK_STREAMING]
    if audio_npz is not None:
        import numpy as np

        with np.load(audio_npz) as held:
            paths = [SHARED / "asr" / name for name in held.files]
    else:
        paths = list((SHARED / "asr").iterdir())
    clips = sorted(p for p in paths if p.suffix in (".wav", ".flac") and not p.name.startswith("stereo"))
    return clips, [p for p in clips if not p.name.startswith("librispeech")]


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def device_name(device: str) -> str:
    """The accelerator in words (the GPU named), or the CPU."""
    import torch

    if device.startswith("cuda"):
        index = torch.device(device).index or 0
        major, minor = torch.cuda.get_device_capability(index)
        return (f"{torch.cuda.get_device_name(index)} (compute {major}.{minor}, CUDA {torch.version.cuda}, "
                f"torch {torch.__version__})")
    if device == "mps":
        return f"Apple MPS, macOS {platform.mac_ver()[0]} {platform.machine()}, torch {torch.__version__}"
    from core.asr.speculative.calibration import machine_key

    return machine_key()


def _spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def _fmt(s: dict, unit: str = "s") -> str:
    return f"{s['median']:.3f} {unit} ({s['min']:.3f}–{s['max']:.3f})"


class _Check:
    """Token-for-token comparison with the verifier's greedy output."""

    def __init__(self, tolerance: float) -> None:
        self.tolerance = tolerance
        self.decodes = self.identical = 0
        self.divergences: list[dict] = []

    def add(self, label: str, reference, result) -> None:
        self.decodes += 1
        ref, got = reference.tokens, result.tokens
        if ref == got:
            self.identical += 1
            return
        i = next((k for k, (a, b) in enumerate(zip(ref, got, strict=False)) if a != b), min(len(ref), len(got)))
        gap = reference.gaps[i] if i < len(reference.gaps) else float("inf")
        self.divergences.append({"where": label, "token": i, "gap": round(gap, 4),
                                 "near_tie": gap < self.tolerance, "greedy": reference.text,
                                 "speculative": result.text})

    def summary(self) -> dict:
        return {"decodes": self.decodes, "identical": self.identical, "tolerance": self.tolerance,
                "divergences": self.divergences,
                "not_near_ties": sum(1 for d in self.divergences if not d["near_tie"])}


def _tree_check(verifier, audio) -> dict:
    """One tree pass over a trunk and a branch against a plain pass over the trunk."""
    import torch

    from core.asr.speculative.tree import DraftTree

    enc = verifier.encode(audio)
    prompt = verifier.prompt()
    trunk = verifier.encode_text(" And so, my fellow Americans, ask not")
    tree = DraftTree.from_paths(trunk, [verifier.encode_text(" And so, my dear friends")])
    state = verifier.start(enc)
    state.append(prompt)
    rows = state.append(tree.tokens, logits_from=0, parents=tree.parents)[: len(trunk)]
    plain_state = verifier.start(enc)
    plain_state.append(prompt)
    plain = plain_state.append(trunk, logits_from=0)
    finite = bool(torch.isfinite(rows.max(-1).values).all())
    return {"finite": finite, "max_abs_diff": float((rows - plain).abs().max()) if finite else float("nan"),
            "same_argmax": rows.argmax(-1).tolist() == plain.argmax(-1).tolist()}


def add_model_arguments(parser: argparse.ArgumentParser, dtypes: str) -> None:
    """``--device``, ``--dtypes`` (default ``dtypes``), ``--drafter`` and ``--verifier``, as this
    benchmark and ``bench/gpu_stream.py`` take them (read back with :func:`comma_list` and
    :func:`chosen_models`)."""
    parser.add_argument("--device", default="auto", help="cuda, cuda:N, mps, cpu or auto (CUDA, then MPS, then CPU)")
    parser.add_argument("--dtypes", default=dtypes)
    parser.add_argument("--drafter", type=Path, help="a transformers folder instead of the store's whisper-tiny.en")
    parser.add_argument("--verifier", type=Path, help="a transformers folder instead of the store's whisper-base")


def comma_list(text: str) -> list[str]:
    """``"a, b,"`` → ``["a", "b"]``."""
    return [x.strip() for x in text.split(",") if x.strip()]


def chosen_models(args: argparse.Namespace) -> tuple[str | Path, str | Path]:
    """The drafter and verifier: the folders given, else the store's tiny.en and base."""
    return args.drafter or "whisper-tiny.en", args.verifier or "whisper-base"


def model_paths(models: tuple[str | Path, ...]) -> list[Path]:
    """Each of ``models`` as a folder: a path as given, a name resolved in the model store."""
    from core.models import ModelStore

    store = ModelStore()
    return [m if isinstance(m, Path) else store.resolve(m) for m in models]


def load_audio(paths: set[Path], npz: Path | None) -> dict:
    """The first 30 s of each clip, decoded here or read from ``bench/carry.py``'s ``clips.npz``."""
    import numpy as np

    if npz is None:
        from core.audio import decode_file

        return {p.name: decode_file(p)[: 30 * 16000] for p in paths}
    with np.load(npz) as clips:
        missing = sorted(p.name for p in paths if p.name not in clips.files)
        if missing:
            raise SystemExit(f"{npz} lacks {', '.join(missing)}")
        return {p.name: clips[p.name][: 30 * 16000] for p in paths}


def run_dtype(device: str, dtype: str, offline: list[Path], streaming: list[Path], repeats: int,
              step: float, models: tuple[str | Path, str | Path] = ("whisper-tiny.en", "whisper-base"),
              audio_npz: Path | None = None) -> dict:
    """Everything for one precision on one device; ``models``: the drafter and the verifier,
    store names or transformers folders."""
    from core.asr.speculative import SpeculativeDecoder, SpeculativeOptions, WhisperRunner, greedy_decode
    from core.asr.speculative.decoder import near_tie
    t0 = time.perf_counter()
    on_cpu = device.startswith("cpu")
    where = model_paths(models)
    drafter = WhisperRunner(where[0], device=device, name="tiny.en", quantize=True,
                            dtype="float32" if on_cpu else dtype)
    verifier = WhisperRunner(where[1], device=device, name="base", dtype=dtype)
    load_s = time.perf_counter() - t0
    dev = verifier.device
    decoder = SpeculativeDecoder(drafter, verifier, SpeculativeOptions())
    # float32 promises the verifier's greedy output exactly: no near-tie is allowed there
    check = _Check(0.0 if verifier.dtype_name == "float32" else near_tie(verifier))
    audio = load_audio({*offline, *streaming}, audio_npz)

    def encode(runner, samples):
        _sync(dev)
        t = time.perf_counter()
        out = runner.encode(samples)
        _sync(dev)
        return out, time.perf_counter() - t

    def offline_run(checking: bool) -> dict:
        totals = {"greedy_decoder": 0.0, "spec_decoder": 0.0, "verifier_encoder": 0.0, "drafter_encoder": 0.0,
                  "greedy_passes": 0, "spec_passes": 0}
        for path in offline:
            samples = audio[path.name]
            venc, v_s = encode(verifier, samples)
            denc, d_s = encode(drafter, samples)
            reference = greedy_decode(verifier, samples, encoder_output=venc)
            result = decoder.decode(samples, encoder_outputs=(venc, denc))
            if checking:
                check.add(f"offline {path.name}", reference, result)
            totals["greedy_decoder"] += reference.stats.verifier_seconds
            totals["spec_decoder"] += result.stats.decoder_seconds
            totals["verifier_encoder"] += v_s
            totals["drafter_encoder"] += d_s
            totals["greedy_passes"] += reference.stats.verifier_passes
            totals["spec_passes"] += result.stats.verifier_passes
        return totals

    def streaming_run(checking: bool) -> dict:
        totals = {"greedy_decoder": 0.0, "spec_decoder": 0.0, "verifier_encoder": 0.0, "spec_drafter_encoder": 0.0,
                  "updates": 0, "previous_proposed": 0, "previous_accepted": 0}
        for path in streaming:
            samples = audio[path.name]
            previous: list[int] = []
            end = step
            while True:
                window = samples[: int(end * 16000)]
                venc, v_s = encode(verifier, window)
                reference = greedy_decode(verifier, window, encoder_output=venc)
                result = decoder.decode(window, previous_tokens=previous, encoder_outputs=(venc, None))
                if checking:
                    check.add(f"streaming {path.name} 0-{len(window) / 16000:.0f}s", reference, result)
                totals["greedy_decoder"] += reference.stats.verifier_seconds
                totals["spec_decoder"] += result.stats.decoder_seconds
                totals["verifier_encoder"] += v_s
                totals["spec_drafter_encoder"] += result.stats.encoder_seconds  # the lazy drafter's, when started
                totals["previous_proposed"] += result.stats.previous_proposed
                totals["previous_accepted"] += result.stats.previous_accepted
                totals["updates"] += 1
                previous = result.tokens
                if end * 16000 >= len(samples):
                    break
                end += step
        return totals

    tree = _tree_check(verifier, audio[offline[0].name])
    offline_run(checking=True)  # warm-up (first-shape costs) and the lossless check
    streaming_run(checking=True)
    off = [offline_run(False) for _ in range(repeats)]
    st = [streaming_run(False) for _ in range(repeats)]

    def speed(runs: list[dict], total_extra: tuple[str, ...]) -> dict:
        greedy = [r["greedy_decoder"] for r in runs]
        spec = [r["spec_decoder"] for r in runs]
        out = {"greedy_decoder_s": _spread(greedy), "spec_decoder_s": _spread(spec),
               "decoder_speedup": _spread([g / s for g, s in zip(greedy, spec, strict=True)])}
        g_total = [r["greedy_decoder"] + r["verifier_encoder"] for r in runs]
        s_total = [r["spec_decoder"] + sum(r[k] for k in total_extra) for r in runs]
        out["total_speedup"] = _spread([g / s for g, s in zip(g_total, s_total, strict=True)])
        out["last_run"] = runs[-1]
        return out

    return {
        "dtype": dtype, "device": str(dev), "load_s": round(load_s, 2), "drafter_dtype": drafter.dtype_name,
        "drafter_int8": drafter.quantized, "lossless": check.summary(), "tree_check": tree,
        "offline": speed(off, ("verifier_encoder", "drafter_encoder")),
        "streaming": speed(st, ("verifier_encoder", "spec_drafter_encoder")),
    }


def run(device: str, dtypes: list[str], quick: bool, repeats: int, step: float,
        models: tuple[str | Path, str | Path] = ("whisper-tiny.en", "whisper-base"),
        audio_npz: Path | None = None, json_path: Path | None = None) -> dict:
    """Every precision in turn; ``json_path`` is rewritten after each (a run cut short keeps them)."""
    from core.compute import torch_device

    device = torch_device(device)
    offline, streaming = _clips(quick, audio_npz)
    result = {"device": device, "device_name": device_name(device), "quick": quick, "repeats": repeats,
              "step_s": step, "offline_clips": [p.name for p in offline],
              "streaming_clips": [p.name for p in streaming],
              "models": [str(m) for m in models], "dtypes": {}}
    for dtype in dtypes:
        print(f"[bench.gpu] {device} {dtype} …", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            result["dtypes"][dtype] = run_dtype(device, dtype, offline, streaming, repeats, step, models, audio_npz)
        except Exception as exc:  # a precision the device lacks (bfloat16 before Ampere / macOS 14) is a row
            result["dtypes"][dtype] = {"dtype": dtype, "error": f"{type(exc).__name__}: {exc}"}
        print(f"[bench.gpu] {dtype} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        if json_path is not None:
            json_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def markdown(r: dict) -> str:
    lines = [f"Device: {r['device']} — {r['device_name']}. Drafter whisper-tiny.en, verifier whisper-base. "
             f"Offline {len(r['offline_clips'])} clips, streaming {len(r['streaming_clips'])} clip(s) re-decoded every "
             f"{r['step_s']:g} s; {r['repeats']} timed run(s) after a warm-up, median (min–max)."
             + ("" if r.get("models", ["whisper-tiny.en"])[0] == "whisper-tiny.en"
                else f" Weights from {', '.join(r['models'])} (bench/carry.py: int8 rows, not the shipped ones)."),
             "",
             "| dtype | identical to its greedy | divergences (gap; near-tie?) | tree pass vs plain | "
             "offline decoder greedy → spec | offline × (decoder / total) | "
             "streaming decoder greedy → spec+prev | "
             "streaming × (decoder / total) | previous accepted |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dtype, d in r["dtypes"].items():
        if "error" in d:
            lines.append(f"| {dtype} | – | {d['error']} | | | | | | |")
            continue
        ll, tree, off, st = d["lossless"], d["tree_check"], d["offline"], d["streaming"]
        div = "; ".join(f"{x['where']} ({x['gap']}; {'yes' if x['near_tie'] else 'NO'})" for x in ll["divergences"])
        last = st["last_run"]
        acc = last["previous_accepted"] / max(1, last["previous_proposed"])
        lines.append(
            f"| {dtype} | {ll['identical']}/{ll['decodes']} | {div or 'none'} (tolerance {ll['tolerance']}) | "
            f"max diff {tree['max_abs_diff']:.4f}, argmax {'same' if tree['same_argmax'] else 'DIFFERENT'} | "
            f"{_fmt(off['greedy_decoder_s'])} → {_fmt(off['spec_decoder_s'])} | "
            f"{off['decoder_speedup']['median']:.2f}× / {off['total_speedup']['median']:.2f}× | "
            f"{_fmt(st['greedy_decoder_s'])} → {_fmt(st['spec_decoder_s'])} | "
            f"{st['decoder_speedup']['median']:.2f}× ({st['decoder_speedup']['min']:.2f}–"
            f"{st['decoder_speedup']['max']:.2f}) / {st['total_speedup']['median']:.2f}× | {acc:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.splitlines()[0])
    add_model_arguments(parser, "float32,float16,bfloat16")
    parser.add_argument("--quick", action="store_true", help="2 clips offline, 1 streaming, 1 timed run")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs (default 3, --quick 1)")
    parser.add_argument("--step", type=float, default=None,
                        help="streaming update interval in s (default 1, --quick 3)")
    parser.add_argument("--json", type=Path, help="write the results as one JSON object here (after each precision)")
    parser.add_argument("--audio", type=Path, help="the clips decoded, from `python -m bench.carry pack --audio`")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    step = args.step or (3.0 if args.quick else 1.0)
    result = run(args.device, comma_list(args.dtypes), args.quick, repeats, step, chosen_models(args), args.audio,
                 args.json)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

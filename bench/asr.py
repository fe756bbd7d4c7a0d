"""Speculative ASR benchmark: drafter + verifier vs the verifier's own greedy decoding, side by side.

Configurations, all in one run on the same machine and runtime (PyTorch, CPU):

- ``verifier-ar``: the verifier's plain greedy decoding (one forward pass per token);
- ``spec``: speculative decoding (adaptive drafts, recycling) from scratch at every decode;
- ``spec+prev`` (streaming only): the previous update's transcript is the first draft;
- ``faster-whisper``: the foundation's engine (CTranslate2 greedy) with the verifier's and the
  drafter's weights, for reference.

Offline mode decodes each clip once (its first 30 s); streaming mode re-decodes the growing
window every 1 s of audio, as the streaming transcriber does. Encoders run once per window and
are shared, so decoder times compare decoding only; total times include the encoders.

Usage: sotto bench asr [--quick] [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
BEGIN, END = "<!-- asr-spec:begin -->", "<!-- asr-spec:end -->"
QUICK_OFFLINE = ("jfk.flac", "librispeech_1089-134686-0000.flac", "librispeech_2412-153948-0000.flac",
                 "mfa_acoustic_corpus.wav")
QUICK_STREAMING = ("jfk.flac", "mfa_acoustic_corpus.wav")


def _clips(quick: bool) -> tuple[list[Path], list[Path]]:
    asr = sorted(p for p in (SHARED / "asr").iterdir() if p.suffix in (".wav", ".flac") and not p.name.startswith("stereo"))
    long = sorted((SHARED / "asr_long").glob("*.flac"))
    if quick:
        return [SHARED / "asr" / n for n in QUICK_OFFLINE], [SHARED / "asr" / n for n in QUICK_STREAMING]
    return asr + long, [p for p in asr if "librispeech" not in p.name][:6] + long


def _reference(path: Path) -> str:
    text = path.with_suffix(".txt").read_text(encoding="utf-8")
    return " ".join(line for line in text.splitlines() if line.strip())


class _Divergences:
    def __init__(self) -> None:
        self.total = 0
        self.identical = 0
        self.tokens = 0
        self.tokens_same = 0
        self.notes: list[dict] = []

    def add(self, label: str, reference, result) -> None:
        self.total += 1
        ref, got = reference.tokens, result.tokens
        n = min(len(ref), len(got))
        first = next((i for i in range(n) if ref[i] != got[i]), n)
        self.tokens += max(len(ref), len(got))
        self.tokens_same += first if ref != got else len(ref)
        if ref == got:
            self.identical += 1
            return
        gap = reference.gaps[first] if first < len(reference.gaps) else None
        self.notes.append({"where": label, "token": first, "top2_gap": None if gap is None else round(gap, 5),
                           "verifier": reference.text, "spec": result.text})


def run(quick: bool) -> dict:
    import numpy as np
    import torch

    from core.asr.speculative import SpeculativeDecoder, SpeculativeOptions, WhisperRunner, greedy_decode
    from core.audio import decode_file
    from core.captions import normalize_english, word_error_rate
    from core.models import ModelStore

    torch.set_num_threads(os.cpu_count() or 1)
    store = ModelStore()
    drafter = WhisperRunner(store.resolve("whisper-tiny.en"), name="tiny.en", quantize=True)
    verifier = WhisperRunner(store.resolve("whisper-base"), name="base")
    spec = SpeculativeDecoder(drafter, verifier, SpeculativeOptions())
    from core.asr.speculative.calibration import calibrated
    from core.paths import demo_sample

    calibration = calibrated(drafter, verifier, demo_sample())  # measured once per machine, then stored
    offline_clips, streaming_clips = _clips(quick)
    div = _Divergences()
    totals = {k: {"decoder_s": 0.0, "encoder_s": 0.0, "audio_s": 0.0, "passes": 0, "drafter_s": 0.0,
                  "verifier_s": 0.0} for k in ("verifier-ar", "spec", "faster-whisper-base", "faster-whisper-tiny.en")}
    wer = {"verifier-ar": [], "spec": [], "faster-whisper-base": [], "faster-whisper-tiny.en": []}
    accepted = proposed = rounds = 0
    recycled_accepted = recycled_proposed = 0

    from faster_whisper import WhisperModel

    fw = {"faster-whisper-base": WhisperModel(str(store.resolve("whisper-base")), device="cpu", compute_type="float32"),
          "faster-whisper-tiny.en": WhisperModel(str(store.resolve("whisper-tiny.en")), device="cpu",
                                                 compute_type="float32")}
    for path in offline_clips:
        audio = decode_file(path)[: 30 * 16000]
        seconds = len(audio) / 16000
        t0 = time.perf_counter()
        encs = spec.encode(audio)
        enc_s = time.perf_counter() - t0
        ref = greedy_decode(verifier, None, encoder_output=encs[0])
        res = spec.decode(None, encoder_outputs=encs)
        div.add(f"offline/{path.name}", ref, res)
        reference = normalize_english(_reference(path))
        for key, r in (("verifier-ar", ref), ("spec", res)):
            t = totals[key]
            t["decoder_s"] += r.stats.decoder_seconds
            t["encoder_s"] += enc_s
            t["audio_s"] += seconds
            t["passes"] += r.stats.verifier_passes
            t["drafter_s"] += r.stats.drafter_seconds
            t["verifier_s"] += r.stats.verifier_seconds
            wer[key].append(word_error_rate(reference, normalize_english(r.text)))
        accepted += res.stats.draft_accepted
        proposed += res.stats.draft_proposed
        recycled_accepted += res.stats.recycled_accepted
        recycled_proposed += res.stats.recycled_proposed
        rounds += res.stats.rounds
        for key, model in fw.items():
            t0 = time.perf_counter()
            segments, _ = model.transcribe(audio, beam_size=1, language="en", without_timestamps=True,
                                           condition_on_previous_text=False, vad_filter=False, temperature=0.0)
            text = " ".join(s.text for s in segments)
            totals[key]["decoder_s"] += time.perf_counter() - t0  # encoder + decoder: CT2 has no split
            totals[key]["audio_s"] += seconds
            wer[key].append(word_error_rate(reference, normalize_english(text)))

    # streaming: re-decode the growing window every 1 s (first 30 s of each clip)
    stream = {k: {"decoder_s": 0.0, "passes": 0, "updates": 0} for k in ("verifier-ar", "spec", "spec+prev")}
    prev_accepted = prev_proposed = 0
    for path in streaming_clips:
        audio = decode_file(path)[: 30 * 16000]
        previous: list[int] = []
        for end in range(16000, len(audio) + 1, 16000):
            window = audio[:end]
            encs = spec.encode(window)
            ref = greedy_decode(verifier, None, encoder_output=encs[0])
            scratch = spec.decode(None, encoder_outputs=encs)
            warm = spec.decode(None, encoder_outputs=encs, previous_tokens=previous)
            previous = warm.tokens
            div.add(f"stream/{path.name}@{end // 16000}s", ref, scratch)
            div.add(f"stream+prev/{path.name}@{end // 16000}s", ref, warm)
            for key, r in (("verifier-ar", ref), ("spec", scratch), ("spec+prev", warm)):
                stream[key]["decoder_s"] += r.stats.decoder_seconds
                stream[key]["passes"] += r.stats.verifier_passes
                stream[key]["updates"] += 1
            prev_accepted += warm.stats.previous_accepted
            prev_proposed += warm.stats.previous_proposed

    ar = totals["verifier-ar"]
    sp = totals["spec"]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {platform.platform()}",
        "drafter": "whisper-tiny.en", "verifier": "whisper-base",
        "offline_clips": [p.name for p in offline_clips],
        "streaming_clips": [p.name for p in streaming_clips],
        "identical_fraction": round(div.identical / div.total, 4),
        "identical_token_fraction": round(div.tokens_same / max(1, div.tokens), 4),
        "decodes_compared": div.total,
        "divergences": div.notes,
        "speedup_vs_verifier_ar": round(stream["verifier-ar"]["decoder_s"] / stream["spec+prev"]["decoder_s"], 3),
        "streaming_decoder_cost_vs_redecode": round(stream["spec+prev"]["decoder_s"] / stream["verifier-ar"]["decoder_s"], 3),
        "offline_speedup_vs_verifier_ar": round(ar["decoder_s"] / sp["decoder_s"], 3),
        "speedup_vs_faster_whisper": round(totals["faster-whisper-base"]["decoder_s"]
                                           / (sp["decoder_s"] + sp["encoder_s"]), 3),
        "wer_spec": round(float(np.mean(wer["spec"])), 4),
        "wer_verifier_ar": round(float(np.mean(wer["verifier-ar"])), 4),
        "wer_faster_whisper_base": round(float(np.mean(wer["faster-whisper-base"])), 4),
        "wer_faster_whisper_tiny_en": round(float(np.mean(wer["faster-whisper-tiny.en"])), 4),
        "acceptance_rate": round(accepted / proposed, 4) if proposed else None,
        "recycled_acceptance_rate": round(recycled_accepted / recycled_proposed, 4) if recycled_proposed else None,
        "previous_transcript_acceptance_rate": round(prev_accepted / prev_proposed, 4) if prev_proposed else None,
        "mean_accepted_per_round": round((accepted + recycled_accepted) / rounds, 3) if rounds else None,
        "offline": totals,
        "streaming": stream,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "calibration": {"threshold": calibration.threshold, "max_draft": calibration.max_draft,
                        "drafter_step_ms": calibration.drafter_step_ms,
                        "verifier_pass_ms": calibration.verifier_pass_ms,
                        "decoder_ms_on_demo": calibration.decoder_ms},
        "assisted_generation": "not run: transformers' assistant_model needs one tokenizer for both models, "
                               "and tiny.en and base tokenize differently",
    }
    return result


def markdown(r: dict) -> str:
    off, st = r["offline"], r["streaming"]
    audio = off["verifier-ar"]["audio_s"]

    def per_s(x: float) -> str:
        return f"{x / audio:.3f}"

    lines = [
        f"Machine: {r['machine']}. Drafter {r['drafter']}, verifier {r['verifier']} (both bundled, converted "
        "from CTranslate2 once). Peak RSS {:.0f} MB.".format(r["peak_rss_mb"]),
        "",
        f"Offline ({len(r['offline_clips'])} clips, {audio:.0f} s of audio; decoder and encoder seconds per audio second):",
        "",
        "| configuration | decoder s/s | encoder s/s | verifier passes | drafter : verifier time | WER |",
        "|---|---|---|---|---|---|",
    ]
    for key in ("verifier-ar", "spec"):
        t = off[key]
        split = f"{t['drafter_s']:.1f} : {t['verifier_s']:.1f} s" if key == "spec" else f"0 : {t['verifier_s']:.1f} s"
        wer = r["wer_spec"] if key == "spec" else r["wer_verifier_ar"]
        lines.append(f"| {key} (PyTorch) | {per_s(t['decoder_s'])} | {per_s(t['encoder_s'])} | {t['passes']} | {split} | {wer:.3f} |")
    for key, w in (("faster-whisper-base", r["wer_faster_whisper_base"]),
                   ("faster-whisper-tiny.en", r["wer_faster_whisper_tiny_en"])):
        lines.append(f"| {key} (CTranslate2, encoder+decoder) | {per_s(off[key]['decoder_s'])} | – | – | – | {w:.3f} |")
    n = st["verifier-ar"]["updates"]
    lines += [
        "",
        f"Streaming ({len(r['streaming_clips'])} clips, {n} updates, window re-decoded every 1 s; decoder seconds):",
        "",
        "| configuration | decoder s | verifier passes | vs verifier greedy |",
        "|---|---|---|---|",
    ]
    base = st["verifier-ar"]["decoder_s"]
    for key in ("verifier-ar", "spec", "spec+prev"):
        t = st[key]
        lines.append(f"| {key} | {t['decoder_s']:.1f} | {t['passes']} | {base / t['decoder_s']:.2f}× |")
    lines += [
        "",
        f"Identical to the verifier's greedy output: {r['identical_fraction']:.3f} of {r['decodes_compared']} decodes "
        f"({r['identical_token_fraction']:.4f} of tokens). Draft acceptance {r['acceptance_rate']}, recycled drafts "
        f"{r['recycled_acceptance_rate']}, previous transcript {r['previous_transcript_acceptance_rate']}; "
        f"mean accepted per round {r['mean_accepted_per_round']}.",
    ]
    c = r["calibration"]
    lines += [
        "",
        f"This machine's calibration (stored; the engine uses it when `asr.calibrate` is on): threshold "
        f"{c['threshold']}, longest draft {c['max_draft']}; drafter step {c['drafter_step_ms']} ms; verifier pass "
        + ", ".join(f"{k} tok {v} ms" for k, v in c["verifier_pass_ms"].items()) + ". The tables above use the "
        "paper's defaults (0.4, 24).",
    ]
    for d in r["divergences"]:
        lines.append(f"- divergence {d['where']} at token {d['token']}, top-2 gap {d['top2_gap']}: "
                     f"“{d['verifier']}” vs “{d['spec']}”")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench asr", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 clips offline, 2 streaming (under 10 minutes)")
    parser.add_argument("--json", help="write the results as one JSON object here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    result = run(args.quick)
    block = markdown(result)
    print(block)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.write_docs:
        from .docs import replace_block

        replace_block(BEGIN, END, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())

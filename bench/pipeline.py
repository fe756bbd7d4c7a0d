"""Baseline pipeline benchmark: cost, accuracy, flicker and latency on the shared recordings.

Runs the foundation's engines (faster-whisper tiny.en greedy + LocalAgreement-2,
Gemma 3 270M greedy re-translation) through the real pipeline:

- fast mode (as fast as possible, every step in order) on each clip of
  ../shared/data/asr: CPU-seconds per audio-second, WER, NE;
- real-time mode on a few clips: lag from speech to screen.

Usage: .venv/bin/python -m bench.pipeline [--quick] [--target de] [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
BEGIN, END = "<!-- pipeline-baseline:begin -->", "<!-- pipeline-baseline:end -->"


def _reference(path: Path) -> str:
    text = path.with_suffix(".txt").read_text(encoding="utf-8")
    if path.name.startswith("stereo_"):
        text = " ".join(line[2:] for line in text.splitlines() if line.startswith("L"))
    return text


def run(quick: bool, target: str) -> dict:
    from core.audio import FileSource
    from core.captions import normalize_english, word_error_rate
    from core.models import ModelStore
    from core.session.engines import create_asr_engine, create_translator
    from core.session.pipeline import CaptionPipeline
    from core.settings import Settings

    # The foundation's reference engines, whatever the current defaults are.
    settings = (
        Settings()
        .with_value("translation.target", target)
        .with_value("translation.engine", "ar")
        .with_value("translation.reuse_prefix", False)
    )
    store = ModelStore()
    asr = create_asr_engine(settings, store)
    translator = create_translator(settings, store)
    clips = sorted(p for p in (SHARED / "asr").iterdir() if p.suffix in (".flac", ".wav") and "stereo" not in p.name)
    if quick:
        clips = [c for c in clips if c.name.startswith(("jfk", "librispeech_1089-134686-0000", "mfa_cold_corpus."))]
    rows = []
    for clip in clips:
        pipe = CaptionPipeline(settings, asr, translator)
        summary = pipe.run(FileSource(clip)).to_dict()
        hyp = " ".join(line.sentence.text for line in pipe.policy.lines)
        wer = word_error_rate(normalize_english(_reference(clip)), normalize_english(hyp))
        rows.append({"clip": clip.name, "mode": "fast", "wer": round(wer, 4), **_pick(summary)})
        print(f"fast  {clip.name}: WER {wer:.3f}, {summary['cpu_seconds_per_audio_second']:.2f} CPU-s/audio-s",
              file=sys.stderr)
    live = (
        clips[:2]
        if quick
        else [c for c in clips if c.name.startswith(("jfk", "mfa_cold_corpus.", "librivox_shakespeare"))]
    )
    for clip in live:
        pipe = CaptionPipeline(settings, asr, translator, realtime=True)
        summary = pipe.run(FileSource(clip, realtime=True)).to_dict()
        rows.append({"clip": clip.name, "mode": "realtime", **_pick(summary), "latency": summary["latency_seconds"]})
        print(f"live  {clip.name}: lag {summary['latency_seconds']['lag']}", file=sys.stderr)
    if translator is not None:
        translator.close()
    total_audio = sum(r["audio_seconds"] for r in rows if r["mode"] == "fast")
    total_cpu = sum(r["cpu_seconds"] for r in rows if r["mode"] == "fast")
    words = [(r["wer"], r["audio_seconds"]) for r in rows if r["mode"] == "fast"]
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "target": target,
        "rows": rows,
        "cpu_seconds_per_audio_second": round(total_cpu / total_audio, 3) if total_audio else None,
        "mean_wer": round(sum(w for w, _ in words) / len(words), 4) if words else None,
        "date": time.strftime("%Y-%m-%d"),
    }


def _pick(summary: dict) -> dict:
    ne = summary["normalized_erasure"]
    return {
        "audio_seconds": summary["audio_seconds"],
        "cpu_seconds": summary["cpu_seconds"],
        "cpu_per_audio_s": summary["cpu_seconds_per_audio_second"],
        "asr_s": summary["stage_seconds"]["asr"],
        "translate_s": summary["stage_seconds"]["translate"],
        "ne_src_out": ne["ne_source_output"],
        "ne_src_disp": ne["ne_source_display"],
        "ne_tr_out": ne.get("ne_translation_output"),
        "ne_tr_disp": ne.get("ne_translation_display"),
    }


def markdown(result: dict, command: str) -> str:
    lines = [
        BEGIN,
        f"Measured {result['date']} on {result['machine']}; translation target `{result['target']}`.",
        f"Reproduce: `{command}`",
        "",
        "| clip | mode | audio s | CPU-s / audio-s | ASR s | translate s | WER | NE src out → shown "
        "| NE tr out → shown | lag mean / p90 / max s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lag = (r.get("latency") or {}).get("lag") or {}
        lag_s = f"{lag['mean']:.2f} / {lag['p90']:.2f} / {lag['max']:.2f}" if lag else "–"
        tr = f"{r['ne_tr_out']:.2f} → {r['ne_tr_disp']:.2f}" if r["ne_tr_out"] is not None else "–"
        wer = f"{r['wer']:.3f}" if "wer" in r else "–"
        lines.append(
            f"| {r['clip']} | {r['mode']} | {r['audio_seconds']:.1f} | {r['cpu_per_audio_s']:.2f} | {r['asr_s']:.1f} | "
            f"{r['translate_s']:.1f} | {wer} | {r['ne_src_out']:.2f} → {r['ne_src_disp']:.2f} | {tr} | {lag_s} |"
        )
    lines += ["", f"All fast-mode clips: **{result['cpu_seconds_per_audio_second']} CPU-s per audio-s**, "
              f"mean WER {result['mean_wer']}.", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench pipeline", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three clips, two in real time (a few minutes)")
    parser.add_argument("--target", default="de")
    parser.add_argument("--json", help="write the result as JSON here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("SOTTO_MODELS_DIR", str(ROOT / ".cache" / "models"))
    result = run(args.quick, args.target)
    command = "packaging/setup.sh test && .venv/bin/python -m bench.pipeline" + (" --quick" if args.quick else "") + \
        f" --target {args.target} --write-docs"
    table = markdown(result, command)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    if args.write_docs:
        text = DOCS.read_text(encoding="utf-8")
        start, end = text.index(BEGIN), text.index(END) + len(END)
        DOCS.write_text(text[:start] + table + text[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`sotto bench encoder`: how many seconds the speech encoder reads, against accuracy.

faster-whisper pads every window to Whisper's 30 s before the encoder, whose attention over 1500
positions is most of a decode's time on the CPU. ``asr.encoder_seconds`` lets the encoder read the
window plus 2 s of padding, at least that many seconds (:func:`core.asr.engine.encoder_frames_rule`).

For each length, the real streaming transcriber (the default engine, model and options) runs in
fast mode, a decode every ``--chunk`` seconds of audio, over the shared long reading and the 16
shared clips; the committed sentences are scored against the references (Whisper's English
normaliser). Reported per length: WER of the reading, mean WER of the clips (and how many clips
got worse than at 30 s by more than 5 points), the encoder's mean time per pass and the
wall time of the whole run, all on this machine. Every length runs in one process on the same
audio, one after the other.

With ``--engine speculative`` the same for the speculative engine (tiny.en drafter, base verifier,
PyTorch), whose transcript is the verifier's greedy output with that encoder; its encoder time is
the verifier's pass (the drafter's encoder runs only when a decode drafts).

Usage: sotto bench encoder [--engine faster-whisper|speculative] [--seconds 30,20,15,10] [--chunk 0.5]
                           [--quick] [--json FILE] [--write-docs] [--from-json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from .live import READING, SHARED

MARKERS = {"faster-whisper": ("<!-- encoder:begin -->", "<!-- encoder:end -->"),
           "speculative": ("<!-- encoder-speculative:begin -->", "<!-- encoder-speculative:end -->")}


class _TimedEncoder:
    """CTranslate2's Whisper model, timing every encoder pass."""

    def __init__(self, model, seconds: list[float]) -> None:
        self._model, self._seconds = model, seconds

    def encode(self, features, *args, **kwargs):
        t0 = time.perf_counter()
        out = self._model.encode(features, *args, **kwargs)
        self._seconds.append(time.perf_counter() - t0)
        return out

    def __getattr__(self, name):
        return getattr(self._model, name)


def clips(quick: bool) -> list[Path]:
    """The long reading and the shared clips (with ``quick``: the reading's first 60 s is enough)."""
    shared = sorted(p for p in (SHARED / "asr").iterdir() if p.suffix in (".flac", ".wav") and "stereo" not in p.name)
    return [READING] + ([] if quick else shared)


def stream(engine, settings, audio, chunk: float) -> str:
    """The committed text of one fast-mode pass over ``audio``."""
    from core.asr import StreamingTranscriber
    from core.audio.decode import SAMPLE_RATE
    from core.session.engines import streaming_options

    transcriber = StreamingTranscriber(engine, streaming_options(settings))
    sentences = []
    step = int(chunk * SAMPLE_RATE)
    for i in range(0, len(audio), step):
        for update in transcriber.push(audio[i:i + step]):
            sentences += update.sentences
    sentences += transcriber.finish().sentences
    return " ".join(s.text for s in sentences)


def build(settings, store, seconds: float, passes: list[float]):
    """The engine of ``settings`` with the encoder reading ``seconds``, every (verifier) encoder
    pass timed into ``passes``."""
    from core.session.engines import create_asr_engine

    key = "asr.speculative_encoder_seconds" if settings.asr.engine == "speculative" else "asr.encoder_seconds"
    engine = create_asr_engine(settings.with_value(key, seconds), store)
    if settings.asr.engine == "speculative":
        runner, real = engine.verifier, engine.verifier.encode

        def timed(audio):
            t0 = time.perf_counter()
            out = real(audio)
            passes.append(time.perf_counter() - t0)
            return out

        runner.encode = timed
    else:
        engine.model.model = _TimedEncoder(engine.model.model, passes)
    return engine


def run(lengths: list[float], chunk: float, quick: bool, engine_name: str = "faster-whisper") -> dict:
    from core.audio.decode import decode_file
    from core.captions import normalize_english, word_error_rate
    from core.models import ModelStore
    from core.settings import Settings

    settings = Settings().with_value("asr.engine", engine_name).with_value("asr.verify_lines", False)
    store = ModelStore()
    files = clips(quick)
    audio = {p.name: decode_file(p)[: 60 * 16000 if quick and p == READING else None] for p in files}
    refs = {}
    for p in files:
        text = p.with_suffix(".txt").read_text(encoding="utf-8")
        if quick and p == READING:  # the sentences that end in the first 60 s
            from .live import _segments

            text = " ".join(text for _start, _end, text in _segments(60.0))
        refs[p.name] = normalize_english(text)
    rows = []
    for seconds in lengths:
        passes: list[float] = []
        engine = build(settings, store, seconds, passes)
        t0 = time.perf_counter()
        wers = {name: round(word_error_rate(refs[name], normalize_english(stream(engine, settings, a, chunk))), 4)
                for name, a in audio.items()}
        row = {"encoder_seconds": seconds, "wer": wers, "reading_wer": wers[READING.name],
               "encoder_pass_s": round(sum(passes) / max(len(passes), 1), 4), "passes": len(passes),
               "wall_s": round(time.perf_counter() - t0, 1),
               "compute_type": getattr(engine, "compute_type", None) or engine.verifier.dtype_name}
        others = [w for name, w in wers.items() if name != READING.name]
        row["clips_mean_wer"] = round(sum(others) / len(others), 4) if others else None
        rows.append(row)
        print(f"{seconds:g} s: reading WER {row['reading_wer']:.3f}, clips {row['clips_mean_wer']}, "
              f"encoder {row['encoder_pass_s']:.3f} s per pass ({len(passes)} passes)", file=sys.stderr, flush=True)
    full = next((r for r in rows if r["encoder_seconds"] >= 30), None)
    for row in rows:
        row["clips_worse"] = (None if full is None else
                              sum(1 for name, w in row["wer"].items()
                                  if name != READING.name and w > full["wer"][name] + 0.05))
    model = (f"{settings.asr.drafter} → {settings.asr.verifier}, speculative" if engine_name == "speculative"
             else settings.asr.model)
    return {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "engine": engine_name, "model": model, "chunk": chunk, "quick": quick, "rows": rows}


def table(result: dict) -> str:
    lines = ["| encoder reads | WER, long reading | WER, clips (mean) | clips > 5 points worse than 30 s "
             "| encoder s per pass | run wall s |", "|---|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        what = "30 s (Whisper's own)" if r["encoder_seconds"] >= 30 else \
            f"window + 2 s, at least {r['encoder_seconds']:g} s"
        clips_wer = "–" if r["clips_mean_wer"] is None else f"{r['clips_mean_wer']:.1%}"
        worse = "–" if r["clips_worse"] is None or r["clips_mean_wer"] is None else str(r["clips_worse"])
        lines.append(f"| {what} | {r['reading_wer']:.1%} | {clips_wer} | {worse} | {r['encoder_pass_s']:.3f} "
                     f"| {r['wall_s']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench encoder", description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(MARKERS), default="faster-whisper", help="the speech engine")
    parser.add_argument("--seconds", default="30,20,15,10", help="encoder lengths to compare (30 = Whisper's)")
    parser.add_argument("--chunk", type=float, default=0.5, help="decode every this many audio seconds")
    parser.add_argument("--quick", action="store_true", help="the reading's first 60 s only")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    parser.add_argument("--from-json", help="table and docs from an earlier --json file (no run)")
    args = parser.parse_args(argv)
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        args.seconds = ",".join(f"{r['encoder_seconds']:g}" for r in result["rows"])
        args.chunk, args.quick = result["chunk"], result["quick"]
        args.engine = result.get("engine", "faster-whisper")
    else:
        result = run([float(s) for s in args.seconds.split(",")], args.chunk, args.quick, args.engine)
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    if args.write_docs:
        from .docs import write_section

        command = "sotto bench encoder" + (" --engine speculative" if args.engine == "speculative" else "") + \
            (" --quick" if args.quick else "") + \
            (f" --seconds {args.seconds}" if args.seconds != "30,20,15,10" else "") + \
            (f" --chunk {args.chunk:g}" if args.chunk != 0.5 else "")
        begin, end = MARKERS[args.engine]
        write_section(begin, end, f"`{command}` — {result['model']} ({result['rows'][0]['compute_type']}), "
                      f"streaming in fast mode (a decode every {result['chunk']:g} s of audio) over the shared "
                      f"long reading{' (first 60 s)' if result['quick'] else ' and the 16 shared clips'}, "
                      f"{result['date']}, {result['machine']}.\n\n"
                      f"{table(result)}", "## Live latency: speech to screen (`sotto bench live`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

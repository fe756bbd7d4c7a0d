"""`sotto bench masks`: which rule for the source's unconfirmed words shows a sentence's end soonest
for how much flicker.

The shared long reading (its first ``--seconds``) goes through the real streaming transcriber
(the default engine and options) in fast mode, a decode every ``--chunk`` seconds of audio, as
the live pipeline decodes on a machine that affords that cadence. Every update's committed text
and tentative words (with their times) are kept, then replayed through the app's caption policy
once per display rule, so the rules are compared on identical hypotheses:

- ``mask-K``: the last K tentative words hidden (display-only mask-k);
- ``heard-S``: a tentative word shown once S seconds of audio follow it (``captions.source_mask
  = heard``, ``captions.source_hold_s``).

Both show everything at the decode that follows a pause (``captions.show_at_pause``). Per rule:
**first seen** in audio seconds (the audio time of the first update whose shown text reaches
the sentence's last word, minus when that word was spoken; a live run adds the decode's own
time and any wait for the compute gate, see ``sotto bench live``) as p50 / p90 over the
sentences, and **NE shown** (normalised erasure of the displayed source).

Usage: sotto bench masks [--seconds 120] [--chunk 0.5,0.75] [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from .live import READING, _segments, _speech_end, coverage, words_of

BEGIN, END = "<!-- masks:begin -->", "<!-- masks:end -->"
RULES = ("mask-3", "mask-2", "mask-1", "mask-0", "heard-0.2", "heard-0.3", "heard-0.5", "heard-0.8")


def record(seconds: float, chunk: float) -> tuple[list, np.ndarray]:
    """The updates of one fast-mode pass over the reading's first ``seconds``, decoding every ``chunk``."""
    from core.asr import StreamingTranscriber
    from core.audio.decode import SAMPLE_RATE, decode_file
    from core.models import ModelStore
    from core.session.engines import create_asr_engine, streaming_options
    from core.settings import Settings

    settings = Settings().with_value("asr.engine", "faster-whisper").with_value("asr.verify_lines", False)
    audio = decode_file(READING)[: int(seconds * SAMPLE_RATE)]
    options = streaming_options(settings)
    options.min_chunk_s = chunk
    transcriber = StreamingTranscriber(create_asr_engine(settings, ModelStore()), options)
    updates = []
    step = int(chunk * SAMPLE_RATE)
    for i in range(0, len(audio), step):
        updates += transcriber.push(audio[i:i + step])
    return updates, audio


def policy_for(rule: str):
    """The caption policy that shows the source by ``rule`` (``mask-K`` or ``heard-S``)."""
    from core.captions import CaptionPolicy

    kind, _, value = rule.partition("-")
    if kind == "mask":
        return CaptionPolicy(int(value), "en", source_mask="words")
    return CaptionPolicy(3, "en", source_mask="heard", source_hold_s=float(value))


def score(updates: list, audio: np.ndarray, seconds: float, rule: str) -> dict:
    """First seen (audio seconds, p50/p90) and NE shown of ``rule`` over ``updates``, replayed
    through the app's own caption policy."""
    from core.captions.metrics import ErasureMeter

    segments = [(s, _speech_end(audio, s, e), text) for s, e, text in _segments(seconds)]
    ref: list[str] = []
    last: list[int] = []
    for _s, _e, text in segments:
        ref += words_of(text)
        last.append(len(ref))
    policy = policy_for(rule)
    meter = ErasureMeter("en")
    seen: list[float | None] = [None] * len(segments)
    for u in updates:
        view = policy.on_transcript(u)
        text = " ".join([*(line.sentence.text for line in view.lines), view.partial.shown_source])
        meter.add(text)
        reach = coverage(words_of(text), ref)
        for k, end in enumerate(last):
            if seen[k] is None and reach >= end:
                seen[k] = u.audio_time - segments[k][1]
    got = [v for v in seen if v is not None]
    return {"rule": rule, "first_seen_p50": round(float(np.percentile(got, 50)), 3),
            "first_seen_p90": round(float(np.percentile(got, 90)), 3), "ne_shown": round(meter.value, 4),
            "sentences": len(segments), "missing": seen.count(None)}


def table(result: dict) -> str:
    chunks = [run["chunk"] for run in result["runs"]]
    head = "| rule | " + " | ".join(f"every {c:g} s: first seen p50 / p90 (s) | NE shown" for c in chunks) + " |"
    rows = [head, "|---|" + "---|---|" * len(chunks)]
    for i, rule in enumerate(result["rules"]):
        cells = []
        for run in result["runs"]:
            r = run["rules"][i]
            cells.append(f"{r['first_seen_p50']:.2f} / {r['first_seen_p90']:.2f} | {r['ne_shown']:.3f}")
        rows.append(f"| {rule} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench masks", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="how much of the reading (default 120)")
    parser.add_argument("--chunk", default="0.5,0.75", help="decode cadences in audio seconds, comma-separated")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    runs = []
    for chunk in (float(c) for c in args.chunk.split(",")):
        print(f"decoding every {chunk:g} s of the first {args.seconds:g} s…", file=sys.stderr)
        updates, audio = record(args.seconds, chunk)
        runs.append({"chunk": chunk, "updates": len(updates),
                     "rules": [score(updates, audio, args.seconds, rule) for rule in RULES]})
    result = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
              "recording": READING.name, "seconds": args.seconds, "rules": list(RULES), "runs": runs}
    print(table(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    if args.write_docs:
        from .docs import write_section

        command = "sotto bench masks" + (f" --seconds {args.seconds:g}" if args.seconds != 120.0 else "") + \
            (f" --chunk {args.chunk}" if args.chunk != "0.5,0.75" else "")
        write_section(BEGIN, END, f"`{command}` — {result['recording']} (first {args.seconds:g} s), "
                      f"{result['date']}; the same hypotheses for every rule, replayed through the app's caption "
                      f"policy, so the table does not depend on the machine's speed.\n\n{table(result)}",
                      "## Live latency: speech to screen (`sotto bench live`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

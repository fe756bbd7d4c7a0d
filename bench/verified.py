"""`sotto bench verified`: verified lines (tiny.en streams, base confirms each finished line) against
the drafter's own lines and against base's offline greedy decoding, by WER.

Every recording (the shared 231 s reading and the 16 clips of `asr/`, `--quick`: the reading's first
60 s and four clips) is streamed in fast mode (0.5 s chunks, in order, so the outcome does not
depend on the machine's speed) through the app's transcriber with `asr.verify_lines` on. From the
same run come the drafter's lines (what tiny.en finished) and the committed, verified lines. Base's
offline greedy decoding of each clip (one call, as the app's engine runs it: int8, the encoder
rule, word timestamps) is the verifier's own reference. Times are the drafter's and the verifier's
decode seconds (the app's CPU and latency are `sotto bench live`'s: `--configs "default,tiny.en
verified by base + translation"`). `--drafter-trim S` trims the drafter's window at a line end
beyond S seconds instead of the app's (core.asr.verified.VerifyOptions.drafter_trim_s); `--context S`
gives the verifier at least S seconds of the verified lines before each line (whole lines) instead of
the app's `VerifyOptions.context_s`.

`--check-lines` decodes every committed line's audio again with a second instance of the verifier
(the line's own prompt) and counts the lines whose words differ: the contract of issue #29, over
every recording (tests/test_verified.py checks one). `--device cuda` runs both models there (the
compute type `auto` gives float16); a device machine has no ../shared and no audio decoder, so
`--audio DIR` reads the recordings from a `bench.carry pack DIR --reading` folder and the models come
from `bench.carry unpack ... --ct2 MODELS` (`SOTTO_MODELS_DIR=MODELS`: the shipped weights rounded
to int8 and back, so their WER is not the shipped models').

Usage: sotto bench verified [--quick] [--drafter-trim S] [--context S] [--check-lines]
                            [--device cpu|cuda] [--audio DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.machine import describe

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
READING = SHARED / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac"
QUICK_CLIPS = ("jfk.flac", "mfa_acoustic_corpus.wav", "librispeech_1089-134686-0000.flac",
               "librivox_sense_and_sensibility_01_austen_64kb-0870.wav")


def _clips(quick: bool, packed: Path | None = None) -> list[Path]:
    if packed is not None:  # a bench.carry folder: the names it holds
        with np.load(packed / "clips.npz") as held:
            names = list(held.files)
    else:
        names = [p.name for p in (SHARED / "asr").iterdir()]
    clips = sorted(SHARED / "asr" / n for n in names if n.endswith((".wav", ".flac")) and not n.startswith("stereo"))
    return [p for p in clips if p.name in QUICK_CLIPS] if quick else clips


def _reference(path: Path, packed: Path | None = None) -> str:
    if packed is not None:
        return json.loads((packed / "references.json").read_text(encoding="utf-8"))[path.name]
    return path.with_suffix(".txt").read_text(encoding="utf-8")


def _audio(path: Path, packed: Path | None = None) -> np.ndarray:
    if packed is None:
        from core.audio import decode_file

        return decode_file(path)
    with np.load(packed / ("reading.npz" if path == READING else "clips.npz")) as held:
        return held[path.name]


def check_lines(lines, audio: np.ndarray, again) -> list[dict]:
    """Each committed line (not a fallback) decoded again by ``again`` (a second instance of the
    verifier) from its own audio and prompt: the lines whose words differ from the committed ones."""
    diverged = []
    for line in lines:
        if line.fallback:
            continue
        clip = audio[int(round(line.start * 16000)):int(round(line.end * 16000))]
        redo = [w.text for w in again.transcribe(clip, line.prompt, "en").words]
        if redo != [w.text for w in line.words]:
            diverged.append({"start": round(line.start, 2), "end": round(line.end, 2),
                             "committed": "".join(w.text for w in line.words), "again": "".join(redo)})
    return diverged


def run(quick: bool, drafter_trim_s: float | None = None, check: bool = False, device: str = "cpu",
        packed: Path | None = None, context_s: float | None = None) -> dict:
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifiedEngine, VerifyOptions, make_transcriber
    from core.captions.metrics import normalize_english, word_error_rate
    from core.models import ModelStore
    from core.session.engines import streaming_options
    from core.settings import Settings

    store = ModelStore()
    drafter = FasterWhisperEngine(store.resolve("whisper-tiny.en"), device=device)
    verifier = FasterWhisperEngine(store.resolve("whisper-base"), device=device)
    again = FasterWhisperEngine(store.resolve("whisper-base"), device=device) if check else None
    engine = VerifiedEngine(drafter, verifier)
    options = streaming_options(Settings())
    verify = VerifyOptions()
    if drafter_trim_s is not None:
        verify.drafter_trim_s = drafter_trim_s
    if context_s is not None:
        verify.context_s = context_s
    rows = []
    for path in [READING, *_clips(quick, packed)]:
        audio = _audio(path, packed)
        if quick and path == READING:
            audio = audio[: 60 * 16000]
        transcriber = make_transcriber(engine, options, verify)
        committed = []
        t0 = time.perf_counter()
        for i in range(0, len(audio), 8000):
            committed += [s.text for u in transcriber.push(audio[i:i + 8000]) for s in u.sentences]
        committed += [s.text for s in transcriber.finish().sentences]
        wall = time.perf_counter() - t0
        drafted = [x.drafted for x in sorted(transcriber.lines + transcriber.dropped, key=lambda x: x.drafted_start)]
        offline = verifier.transcribe(audio, "", "en").text if path != READING else None
        ref = _reference(path, packed)
        if quick and path == READING:  # the reading's first 60 s: its segments up to there
            import csv

            seg = path.with_name(path.name.replace(".flac", ".segments.tsv"))
            with seg.open(encoding="utf-8") as f:
                ref = " ".join(r[4] for r in csv.reader(f, delimiter="\t")
                               if r and r[0] != "utt_id" and float(r[2]) <= 60.0)
        norm = normalize_english(ref)
        row = {"recording": path.name, "audio_s": round(len(audio) / 16000, 1), "lines": len(transcriber.lines),
               "changed": sum(1 for x in transcriber.lines
                              if normalize_english(x.drafted) != normalize_english(x.sentence.text)),
               "fallbacks": transcriber.fallbacks, "dropped": len(transcriber.dropped),
               "wer_drafter": round(word_error_rate(norm, normalize_english(" ".join(drafted))), 4),
               "wer_verified": round(word_error_rate(norm, normalize_english(" ".join(committed))), 4),
               "wer_verifier_offline": (round(word_error_rate(norm, normalize_english(offline)), 4)
                                        if offline is not None else None),
               "draft_s": round(transcriber.decode_seconds, 2), "verify_s": round(transcriber.verify_seconds, 2),
               "wall_s": round(wall, 1)}
        if again is not None:
            diverged = check_lines(transcriber.lines, audio, again)
            row["checked"] = sum(1 for x in transcriber.lines if not x.fallback)
            row["diverged"] = diverged
            for d in diverged:
                print(f"  DIVERGED {path.name} [{d['start']}-{d['end']}]: {d['committed']!r} != {d['again']!r}",
                      file=sys.stderr, flush=True)
        rows.append(row)
        print(f"{path.name}: drafter {row['wer_drafter']:.3f}, verified {row['wer_verified']:.3f}, base offline "
              f"{row['wer_verifier_offline']}, {row['lines']} lines ({row['changed']} changed, "
              f"{row['fallbacks']} fallbacks, {row['dropped']} dropped), verifier {row['verify_s']} s",
              file=sys.stderr, flush=True)
    clips = [r for r in rows if r["recording"] != READING.name]
    summary = {
        "clips_wer_drafter": round(float(np.mean([r["wer_drafter"] for r in clips])), 4),
        "clips_wer_verified": round(float(np.mean([r["wer_verified"] for r in clips])), 4),
        "clips_wer_verifier_offline": round(float(np.mean([r["wer_verifier_offline"] for r in clips])), 4),
        "draft_s_per_audio_s": round(sum(r["draft_s"] for r in rows) / sum(r["audio_s"] for r in rows), 3),
        "verify_s_per_audio_s": round(sum(r["verify_s"] for r in rows) / sum(r["audio_s"] for r in rows), 3),
    }
    if again is not None:
        summary["lines_checked"] = sum(r["checked"] for r in rows)
        summary["lines_diverged"] = sum(len(r["diverged"]) for r in rows)
    return {"date": time.strftime("%Y-%m-%d"), "quick": quick, "drafter_trim_s": verify.drafter_trim_s,
            "context_s": verify.context_s,
            "device": device, "compute_type": verifier.compute_type, "machine": describe(device),
            "rows": rows, **summary}


def table(result: dict) -> str:
    lines = [f"Measured {result['date']} on {result['machine']} (fast mode; WER after normalisation).", "",
             "| recording | audio s | lines (changed, fallbacks, dropped) | tiny.en lines | verified lines "
             "| base offline | drafter s | verifier s |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        off = f"{r['wer_verifier_offline']:.1%}" if r["wer_verifier_offline"] is not None else "–"
        lines.append(f"| {r['recording']} | {r['audio_s']} | {r['lines']} ({r['changed']}, {r['fallbacks']}, "
                     f"{r.get('dropped', '–')}) | "
                     f"{r['wer_drafter']:.1%} | {r['wer_verified']:.1%} | {off} | {r.get('draft_s', '–')} | "
                     f"{r['verify_s']} |")
    lines.append(f"| **clips, mean** | | | {result['clips_wer_drafter']:.1%} | {result['clips_wer_verified']:.1%} | "
                 f"{result['clips_wer_verifier_offline']:.1%} | | |")
    lines += ["", f"Drafter (its window trimmed beyond {result['drafter_trim_s']:g} s): "
              f"{result['draft_s_per_audio_s']} s of decoding per second of audio; verifier: "
              f"{result['verify_s_per_audio_s']} s ({result.get('device', 'cpu')}, "
              f"{result.get('compute_type', 'int8')}, at least {result['context_s']:g} s of context)."]
    if "lines_checked" in result:
        lines.append(f"Committed lines decoded again by a second verifier: {result['lines_checked']} checked, "
                     f"{result['lines_diverged']} differ.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench verified", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--drafter-trim", type=float, metavar="S",
                        help="trim the drafter's window at a line end beyond S seconds (default: the app's)")
    parser.add_argument("--context", type=float, metavar="S",
                        help="at least S seconds of verified lines before each line as context (default: the app's)")
    parser.add_argument("--check-lines", action="store_true",
                        help="decode each committed line again with a second verifier and count differences")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--audio", type=Path, metavar="DIR", help="recordings from a bench.carry pack folder")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    result = run(args.quick, args.drafter_trim, args.check_lines, args.device, args.audio, args.context)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

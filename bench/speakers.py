"""`sotto bench speakers`: who said what, on real telephone calls (issue #50).

Each call of the gathered data (``../shared/data/gathered``, the manifest's rows of ``--split`` with a
``NAME.speakers.tsv``: start, end, speaker, text per turn) is mixed to mono, as a meeting's "Them"
stream hears the other side. Its **lines** are the offline greedy decode of the bundled Whisper base
(as ``sotto bench meeting`` decodes offline: pieces of at most 30 s, the app's verifier settings), cut
after a word that ends a sentence (. ? !) or before a pause of at least ``PAUSE_S`` — the lines the
live path commits are sentences too. Each line's audio (its first word's start to its last word's end) goes through
:class:`~core.speakers.SpeakerTracker` in order, as the app labels committed lines.

Per call: plain WER (every word against the reference); cpWER (the words of each label against the
reference speaker it is matched with, the matching that gives the fewest errors; a label or speaker
left over counts its words as insertions or deletions); the cpWER of one label for everyone (what the
app showed before); the share of lines whose label is matched to the reference speaker who spoke most
of the line's time; each also with the labels after the merges that came later ("final": a
speaker found to be another's voice relabels its lines); speakers found against speakers in the
reference; and the encoder's CPU-s per audio-s of the call (every line embedded; ``time.process_time``,
the whole process). Words are normalised as ``sotto bench meeting`` does.

``--thresholds`` and ``--contrasts`` score several settings of the tracker (every pair) from the same
embeddings (to tune on ``--split tune``).
``--lines FILE`` keeps the decoded lines (read when the file exists, else written), so a timing run
need not decode again.

Usage: sotto bench speakers [--split tune|heldout|all] [--only NAME,...] [--thresholds T,...]
                            [--contrasts C,...] [--max-speakers N] [--lines FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import asdict, dataclass
from itertools import permutations
from pathlib import Path

import numpy as np

from bench.machine import describe
from bench.meeting import DATA, align, normalise
from bench.output import report

PAUSE_S = 0.5  # a line ends before a pause at least this long between words
SAMPLE_RATE = 16000


@dataclass
class Line:
    start: float
    end: float
    text: str


@dataclass
class Turn:
    start: float
    end: float
    speaker: str
    text: str


def calls(folder: Path, split: str) -> list[tuple[str, Path]]:
    """(name, audio path) of the manifest's rows in ``split`` ("all": every split) that have speaker turns."""
    with (folder / "manifest.tsv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = []
    for row in rows:
        path = folder / (row.get("file") or "")
        turns = path.with_name(path.stem + ".speakers.tsv")
        if turns.is_file() and path.is_file() and (split == "all" or (row.get("split") or "").strip() == split):
            out.append((path.stem, path))
    return out


def read_turns(path: Path) -> list[Turn]:
    """The reference turns of ``NAME.speakers.tsv`` (start, end, speaker, text; a header row)."""
    with path.open(encoding="utf-8") as f:
        return [Turn(float(r["start"]), float(r["end"]), r["speaker"], r["text"])
                for r in csv.DictReader(f, delimiter="\t")]


def lines_of(words) -> list[Line]:
    """Timed words (``.start``, ``.end``, ``.text``) as lines: cut after . ? ! and before a pause of PAUSE_S."""
    lines: list[Line] = []
    current: list = []
    for w in words:
        if current and w.start - current[-1].end >= PAUSE_S:
            lines.append(_line(current))
            current = []
        current.append(w)
        if w.text.strip().endswith((".", "?", "!")):
            lines.append(_line(current))
            current = []
    if current:
        lines.append(_line(current))
    return lines


def _line(words) -> Line:
    return Line(round(words[0].start, 3), round(words[-1].end, 3), "".join(w.text for w in words).strip())


def reference_speaker(line: Line, turns: list[Turn]) -> str | None:
    """The reference speaker who spoke most of the line's time (None when no turn overlaps it)."""
    overlap: dict[str, float] = {}
    for t in turns:
        o = min(line.end, t.end) - max(line.start, t.start)
        if o > 0:
            overlap[t.speaker] = overlap.get(t.speaker, 0.0) + o
    return max(overlap, key=overlap.get) if overlap else None


def errors(ref: list[str], hyp: list[str]) -> int:
    """Word errors (substitutions, deletions, insertions) of ``hyp`` against ``ref``."""
    if not ref or not hyp:
        return len(ref) + len(hyp)
    c = align(ref, hyp).counts
    return c["sub"] + c["del"] + c["ins"]


def cp_errors(hyp: dict[str, list[str]], ref: dict[str, list[str]]) -> tuple[int, dict[str, str]]:
    """The fewest errors of the words of each hypothesis label against one reference speaker each (a
    permutation; a label or speaker without a partner counts all its words), and that matching."""
    labels, speakers = list(hyp), list(ref)
    n = max(len(labels), len(speakers))
    cost = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            h = hyp[labels[i]] if i < len(labels) else []
            r = ref[speakers[j]] if j < len(speakers) else []
            cost[i, j] = errors(r, h)
    if n <= 7:
        best = min(permutations(range(n)), key=lambda p: sum(cost[i, p[i]] for i in range(n)))
    else:  # greedy, cheapest pair first (more labels than this means the threshold is far off anyway)
        best, used = [-1] * n, set()
        for flat in np.argsort(cost, axis=None):
            i, j = divmod(int(flat), n)
            if best[i] < 0 and j not in used:
                best[i] = j
                used.add(j)
    matching = {labels[i]: speakers[best[i]] for i in range(len(labels)) if best[i] < len(speakers)}
    return int(sum(cost[i, best[i]] for i in range(n))), matching


def score_labels(lines: list[Line], labels: list[str], turns: list[Turn]) -> dict:
    """cpWER, its one-label baseline, plain WER and per-line label accuracy of labelled lines."""
    ref: dict[str, list[str]] = {}
    for t in turns:
        ref.setdefault(t.speaker, []).extend(normalise(t.text))
    ref_words = sum(len(v) for v in ref.values())
    hyp: dict[str, list[str]] = {}
    every: list[str] = []
    for line, label in zip(lines, labels, strict=True):
        words = normalise(line.text)
        hyp.setdefault(label, []).extend(words)
        every += words
    all_ref = [w for t in sorted(turns, key=lambda t: t.start) for w in normalise(t.text)]
    cp, matching = cp_errors(hyp, ref)
    one, _ = cp_errors({"one": every}, ref)
    truth = [reference_speaker(line, turns) for line in lines]
    judged = [(matching.get(label), true) for label, true in zip(labels, truth, strict=True) if true is not None]
    return {"ref_words": ref_words, "wer": round(errors(all_ref, every) / ref_words, 4),
            "cpwer": round(cp / ref_words, 4), "one_label_cpwer": round(one / ref_words, 4),
            "label_accuracy": round(sum(a == b for a, b in judged) / len(judged), 4) if judged else None,
            "speakers_found": len(hyp), "speakers": len(ref), "matching": matching}


def label_lines(embedded: list[tuple[np.ndarray, float]], options) -> tuple[list[str], list[str]]:
    """The label of each line as first shown, and after the merges that came later (the lines of a speaker
    found to be another's voice take that one's label), from the lines' window embeddings and seconds."""
    from core.speakers import SpeakerTracker

    tracker = SpeakerTracker(None, options)
    shown: list[int] = []
    final: list[int] = []
    for windows, seconds in embedded:
        a = tracker.assign_embedding(windows.mean(axis=0), seconds, windows)
        shown.append(a.speaker)
        if a.merged is not None:
            final = [a.merged[1] if x == a.merged[0] else x for x in final]
        final.append(a.speaker)
    return [str(x) for x in shown], [str(x) for x in final]


def decode_lines(engine, audio: np.ndarray) -> list[Line]:
    from bench.meeting import decode_offline

    _text, words = decode_offline(engine, audio)
    return lines_of(words)


def run(recordings: list[tuple[str, Path]], settings: list[tuple[float, float]], max_speakers: int,
        lines_file: Path | None) -> dict:
    from core.audio import decode_file
    from core.speakers import TrackerOptions
    from core.speakers.model import load_encoder

    cached = json.loads(lines_file.read_text(encoding="utf-8")) if lines_file and lines_file.is_file() else {}
    engine = None
    encoder = load_encoder()
    rows, decoded = [], {}
    for name, path in recordings:
        audio = decode_file(path)  # both channels mixed: the other side of a meeting, heard as one stream
        turns = read_turns(path.with_name(path.stem + ".speakers.tsv"))
        if name in cached:
            lines = [Line(**x) for x in cached[name]]
        else:
            if engine is None:
                from core.asr import FasterWhisperEngine
                from core.models import ModelStore
                from core.settings import Settings

                asr = Settings().asr  # as the app runs its verifier (and `sotto bench meeting` decodes offline)
                engine = FasterWhisperEngine(ModelStore().resolve(asr.verifier), compute_type=asr.compute_dtype,
                                             encoder_seconds=asr.encoder_seconds)
            lines = decode_lines(engine, audio)
        decoded[name] = [asdict(x) for x in lines]
        cpu = time.process_time()
        embedded = []
        for line in lines:
            start = int(line.start * SAMPLE_RATE)
            piece = audio[start:max(int(line.end * SAMPLE_RATE), start + 1)]
            windows = encoder.forward(encoder.window_mels(piece))
            embedded.append((windows, len(piece) / SAMPLE_RATE))
        cpu = time.process_time() - cpu
        audio_s = len(audio) / SAMPLE_RATE
        for threshold, contrast in settings:
            labels, final = label_lines(embedded, TrackerOptions(threshold=threshold, contrast=contrast,
                                                                 max_speakers=max_speakers))
            corrected = score_labels(lines, final, turns)
            rows.append({"recording": name, "threshold": threshold, "contrast": contrast,
                         "audio_s": round(audio_s, 1), "lines": len(lines),
                         "line_audio_s": round(sum(s for _, s in embedded), 1),
                         "encoder_cpu_per_audio_s": round(cpu / audio_s, 4), **score_labels(lines, labels, turns),
                         "cpwer_final": corrected["cpwer"], "label_accuracy_final": corrected["label_accuracy"],
                         "speakers_final": corrected["speakers_found"], "labels": labels, "labels_final": final})
    if lines_file and not lines_file.is_file():
        lines_file.write_text(json.dumps(decoded, indent=1), encoding="utf-8")
    return {"date": time.strftime("%Y-%m-%d"), "machine": describe(), "lines_from": "whisper-base offline greedy",
            "max_speakers": max_speakers, "rows": rows, "totals": totals(rows)}


def totals(rows: list[dict]) -> list[dict]:
    """Per setting: errors summed over the calls (word-weighted), label accuracy over all lines."""
    out = []
    for threshold, contrast in sorted({(r["threshold"], r["contrast"]) for r in rows}):
        rs = [r for r in rows if (r["threshold"], r["contrast"]) == (threshold, contrast)]
        words = sum(r["ref_words"] for r in rs)

        def weighted(key, rs=rs, words=words):
            return round(sum(r[key] * r["ref_words"] for r in rs) / words, 4)

        judged = sum(r["lines"] for r in rs)
        out.append({"threshold": threshold, "contrast": contrast, "recordings": len(rs),
                    "audio_s": round(sum(r["audio_s"] for r in rs), 1),
                    "ref_words": words, "wer": weighted("wer"), "cpwer": weighted("cpwer"),
                    "cpwer_final": weighted("cpwer_final"),
                    "one_label_cpwer": weighted("one_label_cpwer"),
                    "label_accuracy": round(sum((r["label_accuracy"] or 0) * r["lines"] for r in rs) / judged, 4),
                    "label_accuracy_final": round(sum((r["label_accuracy_final"] or 0) * r["lines"] for r in rs)
                                                  / judged, 4),
                    "speakers_final": sum(r["speakers_final"] for r in rs),
                    "speakers_found": sum(r["speakers_found"] for r in rs), "speakers": sum(r["speakers"] for r in rs),
                    "encoder_cpu_per_audio_s": round(sum(r["encoder_cpu_per_audio_s"] * r["audio_s"] for r in rs)
                                                     / sum(r["audio_s"] for r in rs), 4)})
    return out


def table(result: dict) -> str:
    head = ("| recording | threshold / contrast | audio s | lines | WER | cpWER (final) | one-label cpWER | "
            "line label right (final) | speakers found (final) / ref | encoder CPU-s/audio-s |")
    out = [f"Measured {result['date']} on {result['machine']} (lines: {result['lines_from']}; mixed to mono).", "",
           head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        out.append(f"| {r['recording']} | {r['threshold']} / {r['contrast']} | {r['audio_s']} | {r['lines']} | "
                   f"{r['wer']:.1%} | "
                   f"{r['cpwer']:.1%} ({r['cpwer_final']:.1%}) | {r['one_label_cpwer']:.1%} | "
                   f"{r['label_accuracy']:.0%} ({r['label_accuracy_final']:.0%}) | "
                   f"{r['speakers_found']} ({r['speakers_final']}) / {r['speakers']} | "
                   f"{r['encoder_cpu_per_audio_s']:.3f} |")
    out += ["", "| threshold / contrast | calls | audio s | WER | cpWER (final) | one-label cpWER | line label right "
            "(final) | speakers found (final) / ref | encoder CPU-s/audio-s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t in result["totals"]:
        out.append(f"| {t['threshold']} / {t['contrast']} | {t['recordings']} | {t['audio_s']} | {t['wer']:.1%} | "
                   f"{t['cpwer']:.1%} ({t['cpwer_final']:.1%}) | {t['one_label_cpwer']:.1%} | "
                   f"{t['label_accuracy']:.0%} ({t['label_accuracy_final']:.0%}) | {t['speakers_found']} "
                   f"({t['speakers_final']}) / "
                   f"{t['speakers']} | {t['encoder_cpu_per_audio_s']:.3f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from core.speakers import TrackerOptions

    parser = argparse.ArgumentParser(prog="sotto bench speakers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, metavar="DIR", help="a folder with manifest.tsv")
    parser.add_argument("--split", choices=("tune", "heldout", "all"), default="heldout")
    parser.add_argument("--only", help="comma-separated recording names (without suffix)")
    parser.add_argument("--thresholds", default=str(TrackerOptions().threshold),
                        help="comma-separated plain cosine thresholds (default: the app's)")
    parser.add_argument("--contrasts", default=str(TrackerOptions().contrast),
                        help="comma-separated thresholds relative to the mean voice (default: the app's)")
    parser.add_argument("--max-speakers", type=int, default=0, help="the expected number of speakers (0: unknown)")
    parser.add_argument("--lines", type=Path, metavar="FILE", help="decoded lines: read if it exists, else written")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not (args.data / "manifest.tsv").is_file():
        parser.error(f"{args.data} has no manifest.tsv.")
    recordings = calls(args.data, args.split)
    if args.only:
        names = {n.strip() for n in args.only.split(",")}
        recordings = [r for r in recordings if r[0] in names]
    if not recordings:
        parser.error("no recordings to run (see --data, --split, --only).")
    settings = [(float(t), float(c)) for t in args.thresholds.split(",") for c in args.contrasts.split(",")]
    result = run(recordings, settings, args.max_speakers, args.lines)
    return report(result, args.json, table(result))


if __name__ == "__main__":
    sys.exit(main())

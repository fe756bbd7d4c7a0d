"""Rebuild the gathered evaluation data (``../shared/data/gathered``) from public repository snapshots.

Data fetched from public repositories is never committed to the project: it lives in the shared
folder, which a new machine may not have. This script makes it again, the same way each time, from
the repositories' snapshots (the ``fetch`` tool puts them in ``/work/.mirror/OWNER+NAME``; pass
``--mirror`` for another place). Each source names its repository, path, commit and licence, and the
folder gets a README, a manifest (file, length, sha256, split) and the licence notes.

    python -m bench.gather [--mirror DIR] [--out DIR]

- ``conversation/``: SpokenWOZ telephone calls (two people, one per channel, 8 kHz), CC BY-NC 4.0,
  from the sample in shogo0731/jmoshi-ft. Written as 16 kHz two-channel FLAC, ``NAME.txt`` (the words
  in time order) and ``NAME.speakers.tsv`` (start, end, speaker, text per turn). The transcripts are
  the corpus's word-level ones. Four calls tune, two are held out.
- ``spoken_mt/``: TED talk transcripts with their human German translations (IWSLT 2017 test sets
  tst2016 = tune and tst2017 = held out, from hlt-mt/WIT3, CC BY-NC-ND 3.0), one segment per line
  (``.en``, ``.de``, and ``.talks`` with each line's talk id), and short informal Tatoeba sentence
  pairs (CC BY 2.0 FR, via DarrenCarvalho/Language-Translation's ``data/deu.txt``), split in two; and
  the English and German lines of customer-support conversations (BConTrasT, the WMT20 chat task's
  corpus from Unbabel/BConTrasT, CC BY-SA 4.0: Taskmaster-1's dialogues and their German translations),
  both sides as English → German pairs in conversation order: dev = tune, test (gold references) = held out.
- ``lang/fleurs_es.flac``: two Spanish FLEURS recordings with their transcripts (CC BY 4.0, from
  sebastian-software/cuttledoc's test fixtures).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import re
import subprocess
import tarfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT.parent / "shared" / "data" / "gathered"
MIRROR = Path("/work/.mirror")

SPOKENWOZ = "shogo0731/jmoshi-ft"
SPOKENWOZ_CALLS = {"MUL1423": "tune", "SNG0480": "tune", "SNG1263": "tune", "SNG1640": "tune",
                   "SNG0072": "heldout", "SNG0696": "heldout"}
WIT3 = "hlt-mt/WIT3"
TED_SPLITS = {"tst2016": "tune", "tst2017": "heldout"}
TATOEBA = "DarrenCarvalho/Language-Translation"
TATOEBA_PER_SPLIT = 300
TATOEBA_MAX_WORDS = 6
CHAT = "Unbabel/BConTrasT"
CHAT_SPLITS = {"dev.json": "tune", "test1_corpus-with_gold_references.json": "heldout"}
FLEURS = "sebastian-software/cuttledoc"
FLEURS_ES = ("packages/cuttledoc/fixtures/fleurs-es-000", "packages/cuttledoc/fixtures/fleurs-es-001")
RATE = 16000

LICENCES = {
    "CC-BY-NC-4.0": "https://creativecommons.org/licenses/by-nc/4.0/legalcode",
    "CC-BY-NC-ND-3.0": "https://creativecommons.org/licenses/by-nc-nd/3.0/legalcode",
    "CC-BY-2.0-FR": "https://creativecommons.org/licenses/by/2.0/fr/legalcode",
    "CC-BY-4.0": "https://creativecommons.org/licenses/by/4.0/legalcode",
    "CC-BY-SA-4.0": "https://creativecommons.org/licenses/by-sa/4.0/legalcode",
}


class Snapshot:
    """One repository's snapshot: a git directory read with ``git show``."""

    def __init__(self, mirror: Path, repo: str):
        base = mirror / repo.replace("/", "+") / "repo"
        self.git = base / ".git" if (base / ".git").is_dir() else base
        if not (self.git / "HEAD").is_file():
            raise SystemExit(f"No snapshot of {repo} in {mirror}: fetch github:{repo} first.")
        self.repo = repo
        self.commit = self._git("rev-parse", "HEAD").decode().strip()

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "--git-dir", str(self.git), *args], check=True, capture_output=True).stdout

    def read(self, path: str) -> bytes:
        data = self._git("show", f"{self.commit}:{path}")
        if data.startswith(b"version https://git-lfs"):
            raise SystemExit(f"{self.repo}:{path} is a Git LFS pointer in the snapshot, not the file.")
        return data

    def source(self, path: str) -> str:
        return f"{self.repo} `{path}` @ {self.commit[:12]}"


# -- audio ---------------------------------------------------------------------------------------
def _decode(data: bytes, rate: int = RATE) -> np.ndarray:
    """Any audio file's bytes as (frames, channels) float32 at ``rate``, channels kept."""
    import av

    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        layout = "stereo" if stream.codec_context.channels == 2 else "mono"
        resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
        chunks = [r.to_ndarray() for frame in container.decode(stream) for r in resampler.resample(frame)]
        chunks += [r.to_ndarray() for r in resampler.resample(None)]
    return np.concatenate(chunks, axis=1).T.astype(np.float32)


def _write_flac(path: Path, audio: np.ndarray, rate: int = RATE) -> None:
    import av

    audio = np.clip(audio, -1.0, 1.0)
    pcm = (audio * 32767).round().astype(np.int16)  # (frames, channels): packed s16 interleaves them row by row
    layout = "stereo" if pcm.shape[1] == 2 else "mono"
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w", format="flac") as container:
        stream = container.add_stream("flac", rate=rate, layout=layout)
        stream.format = "s16"
        for start in range(0, len(pcm), 4096):
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(pcm[start:start + 4096].reshape(1, -1)),
                                               format="s16", layout=layout)
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


# -- sources -------------------------------------------------------------------------------------
def conversation(mirror: Path, out: Path) -> list[tuple[str, str, str, str, str]]:
    snap = Snapshot(mirror, SPOKENWOZ)
    rows = []
    for call, split in SPOKENWOZ_CALLS.items():
        audio = _decode(snap.read(f"data/spokenwoz_sample/audio/{call}.wav"))
        words = sorted(json.loads(snap.read(f"data/spokenwoz_sample/text/{call}.json")), key=lambda w: w["start"])
        name = f"conversation/spokenwoz_{call}"
        _write_flac(out / f"{name}.flac", audio)
        (out / f"{name}.txt").write_text(" ".join(w["word"] for w in words) + "\n", encoding="utf-8")
        turns: list[list] = []
        for w in words:
            if turns and turns[-1][2] == w["speaker"]:
                turns[-1][1] = w["end"]
                turns[-1][3].append(w["word"])
            else:
                turns.append([w["start"], w["end"], w["speaker"], [w["word"]]])
        tsv = ["start\tend\tspeaker\ttext"] + [f"{s:.3f}\t{e:.3f}\t{spk}\t{' '.join(t)}" for s, e, spk, t in turns]
        (out / f"{name}.speakers.tsv").write_text("\n".join(tsv) + "\n", encoding="utf-8")
        where = snap.source(f"data/spokenwoz_sample/*/{call}.*")
        rows.append((f"{name}.flac", f"{len(audio) / RATE:.1f} s", split, where, "CC-BY-NC-4.0"))
    return rows


def _segments(xml: bytes) -> list[tuple[str, str]]:
    root = ElementTree.fromstring(xml)
    return [(doc.get("docid"), " ".join((seg.text or "").split()))
            for doc in root.iter("doc") for seg in doc.iter("seg")]


def spoken_mt(mirror: Path, out: Path) -> list[tuple[str, str, str, str, str]]:
    snap = Snapshot(mirror, WIT3)
    archives = {}
    for pair, path in (("en-de", "archive/2017-01-ted-test/texts/en/de/en-de.tgz"),
                       ("de-en", "archive/2017-01-ted-test/texts/de/en/de-en.tgz")):
        with tarfile.open(fileobj=io.BytesIO(snap.read(path))) as tar:
            archives[pair] = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.name.endswith(".xml")}
    rows = []
    for test, split in TED_SPLITS.items():
        en = _segments(archives["en-de"][f"en-de/IWSLT17.TED.{test}.en-de.en.xml"])
        de = _segments(archives["de-en"][f"de-en/IWSLT17.TED.{test}.de-en.de.xml"])
        if len(en) != len(de) or any(a[0] != b[0] for a, b in zip(en, de, strict=True)):
            raise SystemExit(f"TED {test}: the English and German segments do not line up.")
        name = f"spoken_mt/ted_{test}"
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.en").write_text("".join(t + "\n" for _, t in en), encoding="utf-8")
        (out / f"{name}.de").write_text("".join(t + "\n" for _, t in de), encoding="utf-8")
        (out / f"{name}.talks").write_text("".join(d + "\n" for d, _ in en), encoding="utf-8")
        where = snap.source("archive/2017-01-ted-test/texts/{en/de,de/en}")
        rows.append((f"{name}.en", f"{len(en)} lines", split, where, "CC-BY-NC-ND-3.0"))

    snap = Snapshot(mirror, TATOEBA)
    pairs, seen = [], set()
    for line in snap.read("data/deu.txt").decode("utf-8").splitlines():
        fields = line.strip().split("\t")
        if len(fields) < 2 or not re.search(r"[A-Za-z]", fields[0]):
            continue
        en, de = fields[0].strip(), fields[1].strip()
        key = en.lower()
        if key in seen or len(en.split()) > TATOEBA_MAX_WORDS or len(en.split()) < 2:
            continue
        seen.add(key)
        pairs.append((en, de))
    random.Random(48).shuffle(pairs)
    for i, split in enumerate(("tune", "heldout")):
        part = pairs[i * TATOEBA_PER_SPLIT:(i + 1) * TATOEBA_PER_SPLIT]
        name = f"spoken_mt/tatoeba_short_{split}"
        (out / f"{name}.en").write_text("".join(e + "\n" for e, _ in part), encoding="utf-8")
        (out / f"{name}.de").write_text("".join(d + "\n" for _, d in part), encoding="utf-8")
        rows.append((f"{name}.en", f"{len(part)} lines", split, snap.source("data/deu.txt"), "CC-BY-2.0-FR"))

    snap = Snapshot(mirror, CHAT)
    for path, split in CHAT_SPLITS.items():
        pairs = []
        for turns in json.loads(snap.read(path)).values():
            for turn in turns:  # the agent writes English; the customer's English is the target of their German
                en, de = ((turn["source"], turn["target"]) if turn["speaker"] == "agent"
                          else (turn["target"], turn["source"]))
                en, de = " ".join(en.split()), " ".join(de.split())
                if en and de:
                    pairs.append((en, de))
        name = f"spoken_mt/chat_{split}"
        (out / f"{name}.en").write_text("".join(e + "\n" for e, _ in pairs), encoding="utf-8")
        (out / f"{name}.de").write_text("".join(d + "\n" for _, d in pairs), encoding="utf-8")
        rows.append((f"{name}.en", f"{len(pairs)} lines", split, snap.source(path), "CC-BY-SA-4.0"))
    return rows


def lang(mirror: Path, out: Path) -> list[tuple[str, str, str, str, str]]:
    snap = Snapshot(mirror, FLEURS)
    gap = np.zeros((RATE // 2, 1), np.float32)
    parts, texts = [], []
    for stem in FLEURS_ES:
        audio = _decode(snap.read(f"{stem}.ogg"))
        parts += [audio.mean(axis=1, keepdims=True), gap]
        texts.append(snap.read(f"{stem}.txt").decode("utf-8").strip())
    audio = np.concatenate(parts[:-1])
    _write_flac(out / "lang/fleurs_es.flac", audio)
    (out / "lang/fleurs_es.txt").write_text(" ".join(texts) + "\n", encoding="utf-8")
    where = snap.source("packages/cuttledoc/fixtures/fleurs-es-00[01].*")
    return [("lang/fleurs_es.flac", f"{len(audio) / RATE:.1f} s", "test", where, "CC-BY-4.0")]


def write_index(out: Path, rows: list[tuple[str, str, str, str, str]]) -> None:
    manifest = ["file\tlength\tsha256\tsplit"]
    for file, length, split, _, _ in rows:
        manifest.append(f"{file}\t{length}\t{hashlib.sha256((out / file).read_bytes()).hexdigest()}\t{split}")
    (out / "manifest.tsv").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    table = ["| file | length | split | source (repository, path, commit) | licence |", "|---|---:|---|---|---|"]
    table += [f"| {f} | {n} | {s} | {src} | {lic} |" for f, n, s, src, lic in rows]
    (out / "README.md").write_text(
        "# Gathered evaluation data\n\nMade by `python -m bench.gather` in the Sotto project from public repository "
        "snapshots; not part of the project. Use it for evaluation only, under each source's licence "
        "(non-commercial where it says NC). Rows marked `heldout` are never used for tuning.\n\n"
        + "\n".join(table) + "\n\nLicences:\n\n"
        + "".join(f"- {k}: {v}\n" for k, v in LICENCES.items()), encoding="utf-8")
    licences = out / "licenses"
    licences.mkdir(exist_ok=True)
    for key, url in LICENCES.items():
        (licences / f"{key}.txt").write_text(f"{key}\n{url}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench gather", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="where the repository snapshots are")
    parser.add_argument("--out", type=Path, default=OUT, help="the folder to write (default ../shared/data/gathered)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = conversation(args.mirror, args.out) + spoken_mt(args.mirror, args.out) + lang(args.mirror, args.out)
    write_index(args.out, rows)
    for file, length, split, _, _ in rows:
        print(f"{file}\t{length}\t{split}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The app's speculative engine streaming recordings on a device: time per audio second and committed WER.

``bench/gpu.py`` checks the speculative decoder itself (lossless per precision, one decode at a
time); this runs what the app runs with ``asr.engine = speculative``: a
:class:`~core.asr.speculative.engine.SpeculativeEngine` under the
:class:`~core.asr.streaming.StreamingTranscriber`, with the settings' streaming options, each
recording pushed in 0.5 s chunks as fast as it decodes (fast mode: the words do not depend on the
machine's speed, so a GPU's transcript can be compared with a CPU's). Voice activity is off: its
model ships inside faster-whisper, which a device machine may lack.

Models come from the store, or from transformers folders (``--drafter``, ``--verifier``); the
recordings from ``../shared``, or from ``bench/carry.py``'s decoded ``clips.npz`` and
``reading.npz`` with their reference texts (``--audio DIR``: ``pack --audio --reading`` writes all
three).

Usage: python -m bench.gpu_stream [--device cuda|mps|cpu] [--dtypes float16,float32]
                                  [--recordings NAME,...] [--drafter DIR] [--verifier DIR]
                                  [--audio DIR] [--json FILE]
(`sotto bench gpu-stream …` runs the same where Sotto is set up; a device machine without it runs the
module as above.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
READING = "ljspeech_LJ001-0001_to_0032_concat_16k.flac"
DEFAULT_RECORDINGS = (READING, "librivox_shakespeare_sonnet001.wav", "mfa_cold_corpus.wav")


def _shared_path(name: str) -> Path:
    return SHARED / ("asr_long" if name == READING else "asr") / name


def load(names: list[str], audio_dir: Path | None) -> tuple[dict, dict]:
    """The recordings (16 kHz float32) and their reference texts."""
    import numpy as np

    if audio_dir is None:
        from core.audio import decode_file

        return ({n: decode_file(_shared_path(n)) for n in names},
                {n: _shared_path(n).with_suffix(".txt").read_text(encoding="utf-8") for n in names})
    held: dict = {}
    for file in sorted(audio_dir.glob("*.npz")):
        with np.load(file) as part:
            held.update({k: part[k] for k in part.files if k in names})
    references = json.loads((audio_dir / "references.json").read_text(encoding="utf-8"))
    missing = [n for n in names if n not in held or n not in references]
    if missing:
        raise SystemExit(f"{audio_dir} lacks {', '.join(missing)}")
    return held, {n: references[n] for n in names}


def run(device: str, dtypes: list[str], names: list[str], drafter: str | Path, verifier: str | Path,
        audio_dir: Path | None, json_path: Path | None = None) -> dict:
    """Every recording in every precision; ``json_path`` is rewritten after each row."""
    from dataclasses import replace

    from bench.gpu import device_name, model_paths
    from core.asr.speculative.engine import SpeculativeEngine
    from core.asr.streaming import StreamingTranscriber
    from core.captions.metrics import normalize_english, word_error_rate
    from core.compute import torch_device
    from core.session.engines import streaming_options
    from core.settings import Settings

    device = torch_device(device)
    audio, references = load(names, audio_dir)
    paths = model_paths((drafter, verifier))
    options = replace(streaming_options(Settings()), use_vad=False)
    result = {"device": device, "device_name": device_name(device), "models": [str(p) for p in paths],
              "chunk_s": 0.5, "vad": False, "rows": []}
    for dtype in dtypes:
        t0 = time.perf_counter()
        engine = SpeculativeEngine(paths[0], paths[1], device=device, dtype=dtype)
        load_s = time.perf_counter() - t0
        for name in names:
            samples = audio[name]
            before = {k: v for k, v in vars(engine.stats).items() if isinstance(v, (int, float))}
            transcriber = StreamingTranscriber(engine, options)
            committed: list[str] = []
            t0 = time.perf_counter()
            for i in range(0, len(samples), 8000):
                committed += [s.text for u in transcriber.push(samples[i:i + 8000]) for s in u.sentences]
            committed += [s.text for s in transcriber.finish().sentences]
            wall = time.perf_counter() - t0
            text = " ".join(committed)
            row = {"dtype": dtype, "recording": name, "audio_s": round(len(samples) / 16000, 1),
                   "load_s": round(load_s, 1), "wall_s": round(wall, 2),
                   "wall_per_audio_s": round(wall / (len(samples) / 16000), 4),
                   "wer": round(word_error_rate(normalize_english(references[name]), normalize_english(text)), 4),
                   "text": text,
                   "stats": {k: round(v - before[k], 3) for k, v in vars(engine.stats).items() if k in before}}
            result["rows"].append(row)
            print(f"[bench.gpu_stream] {dtype} {name}: {row['wall_per_audio_s']} s per audio s, WER {row['wer']:.1%}",
                  file=sys.stderr, flush=True)
            if json_path is not None:
                json_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def markdown(r: dict) -> str:
    lines = [f"Device: {r['device']} — {r['device_name']}; fast mode, {r['chunk_s']:g} s chunks, "
             "voice activity off.", "",
             "| dtype | recording | audio s | wall s | wall per audio s | WER | verifier passes | "
             "previous transcript accepted |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in r["rows"]:
        st = row["stats"]
        lines.append(f"| {row['dtype']} | {row['recording']} | {row['audio_s']} | {row['wall_s']} | "
                     f"{row['wall_per_audio_s']:.3f} | {row['wer']:.1%} | {int(st.get('verifier_passes', 0))} | "
                     f"{int(st.get('previous_accepted', 0))} / {int(st.get('previous_proposed', 0))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from bench.gpu import add_model_arguments, chosen_models, comma_list

    parser = argparse.ArgumentParser(prog="python -m bench.gpu_stream", description=__doc__.splitlines()[0])
    add_model_arguments(parser, "float16,float32")
    parser.add_argument("--recordings", default=",".join(DEFAULT_RECORDINGS))
    parser.add_argument("--audio", type=Path, help="a folder from `python -m bench.carry pack --audio --reading`")
    parser.add_argument("--json", type=Path, help="write the results as one JSON object here (after each row)")
    args = parser.parse_args(argv)
    result = run(args.device, comma_list(args.dtypes), comma_list(args.recordings), *chosen_models(args), args.audio,
                 args.json)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Speech models and clips, packed small enough to carry to a machine that cannot download.

A device machine (a lent GPU) takes at most 64 MiB per call and has no network and no PyAV. The
speculative engine's transformers folders are 151 MB (tiny.en) and 290 MB (base) in float32, so
``pack`` stores each large matrix as int8 with one float32 scale per row (absmax), everything
else as float16, split into parts of at most ``--part-mb``; ``unpack`` writes transformers
folders again (float32 ``model.safetensors`` + ``config.json`` + ``tokenizer.json``), and
``--audio`` stores the shared clips decoded (float32, 16 kHz) and their texts so no decoder is
needed there (``--reading``: the 231 s reading too).

The unpacked weights are not the shipped ones (int8 rounding, about 0.4% of a row's largest
value): a benchmark run on them checks the speculative engine against the greedy output of
*those* weights, which is what its losslessness contract is about, and times models of the
same shape; its WER is not the shipped model's.

Usage:
  python -m bench.carry pack OUT [--models whisper-tiny.en,whisper-base] [--audio] [--reading] [--part-mb 28]
  python -m bench.carry unpack DIR... --out HF [--ct2 MODELS [--quantization float16]]

``unpack --ct2 MODELS`` also converts each model back to CTranslate2 (``quantization``) as a model-store
folder under MODELS, so the app's own engine (``SOTTO_MODELS_DIR=MODELS``) runs there: the verified
engine and the calibration on a GPU (``sotto bench verified --device cuda``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
INT8_MIN_ELEMENTS = 100_000  # smaller tensors (biases, norms, convolution kernels) stay float16
KEEP_FLOAT16 = ("embed_positions",)  # position tables: small, and their rows are not alike


def quantize_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and their float32 scales (absmax / 127; an all-zero row gets scale 1)."""
    m = matrix.astype(np.float32)
    scale = np.abs(m).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(m / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def dequantize_rows(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) * scale[:, None]


def _encode(name: str, tensor: np.ndarray) -> dict[str, np.ndarray]:
    if (tensor.ndim == 2 and tensor.size >= INT8_MIN_ELEMENTS and tensor.dtype.kind == "f"
            and not any(k in name for k in KEEP_FLOAT16)):
        q, scale = quantize_rows(tensor)
        return {f"{name}|q8": q, f"{name}|scale": scale}
    if tensor.dtype.kind == "f":
        return {f"{name}|f16": tensor.astype(np.float16)}
    return {f"{name}|raw": tensor}


def pack_model(folder: Path, out: Path, part_bytes: int, ct2_folder: Path | None = None) -> list[Path]:
    """``folder`` (a transformers Whisper folder) → ``out/<model>.meta.json`` + ``.partN.npz`` files;
    ``ct2_folder``: the model store's CTranslate2 folder it came from, whose small files travel too."""
    from safetensors.numpy import load_file

    state = load_file(str(folder / "model.safetensors"))
    model = folder.parent.name if folder.name == "hf-converted" else folder.name
    parts: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name in sorted(state):
        encoded = _encode(name, state[name])
        nbytes = sum(a.nbytes for a in encoded.values())
        if size and size + nbytes > part_bytes:
            parts.append({})
            size = 0
        parts[-1].update(encoded)
        size += nbytes
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, part in enumerate(parts):
        path = out / f"{model}.part{i}.npz"
        np.savez_compressed(path, **part)
        written.append(path)
    meta = {"model": model, "parts": len(parts),
            "config": json.loads((folder / "config.json").read_text(encoding="utf-8")),
            "tokenizer": (folder / "tokenizer.json").read_text(encoding="utf-8")}
    if ct2_folder is not None:  # the CTranslate2 model's own small files (its config holds the alignment heads)
        meta["ct2_files"] = {f.name: f.read_text(encoding="utf-8") for f in sorted(ct2_folder.iterdir())
                             if f.is_file() and f.name not in ("model.bin", "manifest.json", "tokenizer.json")}
    (out / f"{model}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return written


def unpack(dirs: list[Path], out: Path, ct2_out: Path | None = None, quantization: str = "float16") -> list[Path]:
    """Every model whose meta and parts are found in ``dirs`` → ``out/<model>/`` (a transformers folder);
    with ``ct2_out``, also ``ct2_out/<model>/`` (a CTranslate2 model-store folder, :func:`to_ct2`)."""
    from safetensors.numpy import save_file

    files = {p.name: p for d in dirs for p in d.iterdir()}
    made = []
    for meta_name in sorted(n for n in files if n.endswith(".meta.json")):
        meta = json.loads(files[meta_name].read_text(encoding="utf-8"))
        model = meta["model"]
        missing = [f"{model}.part{i}.npz" for i in range(meta["parts"]) if f"{model}.part{i}.npz" not in files]
        if missing:
            raise SystemExit(f"{model}: parts missing: {', '.join(missing)}")
        state: dict[str, np.ndarray] = {}
        for i in range(meta["parts"]):
            with np.load(files[f"{model}.part{i}.npz"]) as part:
                arrays = {k: part[k] for k in part.files}
            for key, value in arrays.items():
                name, kind = key.rsplit("|", 1)
                if kind == "q8":
                    state[name] = dequantize_rows(value, arrays[f"{name}|scale"])
                elif kind == "f16":
                    state[name] = value.astype(np.float32)
                elif kind == "raw":
                    state[name] = value
        folder = out / model
        folder.mkdir(parents=True, exist_ok=True)
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
        (folder / "config.json").write_text(json.dumps(meta["config"], indent=2), encoding="utf-8")
        (folder / "tokenizer.json").write_text(meta["tokenizer"], encoding="utf-8")
        made.append(folder)
        if ct2_out is not None:
            made.append(to_ct2(folder, meta, ct2_out / model, quantization))
    return made


def to_ct2(folder: Path, meta: dict, dest: Path, quantization: str) -> Path:
    """A transformers folder → a model-store folder the app's engine loads (``dest``): CTranslate2's
    converter writes ``model.bin`` in ``quantization``, the store's own small files (packed with the
    model) replace the converter's, and a manifest records the sizes, so ``SOTTO_MODELS_DIR`` can
    point at ``dest``'s parent."""
    import ctranslate2

    if "ct2_files" not in meta:
        raise SystemExit(f"{meta['model']}: packed without its CTranslate2 files (pack it again)")
    ctranslate2.converters.TransformersConverter(str(folder)).convert(str(dest), quantization=quantization,
                                                                      force=True)
    for stale in dest.glob("vocabulary.*"):
        stale.unlink()
    for name, text in {**meta["ct2_files"], "tokenizer.json": meta["tokenizer"]}.items():
        (dest / name).write_text(text, encoding="utf-8")
    files = {f.name: {"size": f.stat().st_size, "sha256": None} for f in sorted(dest.iterdir()) if f.is_file()}
    manifest = {"name": meta["model"], "kind": "whisper-ct2", "source": f"bench.carry ({quantization})",
                "main_file": None, "files": files, "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return dest


def pack_audio(out: Path, reading: bool = False) -> list[Path]:
    """Every shared ASR clip, decoded as the benchmarks decode it, in one compressed file, and their
    reference texts (``references.json``); with ``reading``, the 231 s reading too (its own file)."""
    from core.audio import decode_file

    clips = sorted(p for p in (SHARED / "asr").iterdir() if p.suffix in (".wav", ".flac"))
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "clips.npz"]
    np.savez_compressed(written[0], **{p.name: decode_file(p) for p in clips})
    if reading:
        long = SHARED / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac"
        written.append(out / "reading.npz")
        np.savez_compressed(written[-1], **{long.name: decode_file(long)})
        clips.append(long)
    references = {p.name: p.with_suffix(".txt").read_text(encoding="utf-8") for p in clips
                  if p.with_suffix(".txt").exists()}
    written.append(out / "references.json")
    written[-1].write_text(json.dumps(references), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.carry", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="pack models (and clips) into OUT")
    p.add_argument("out", type=Path)
    p.add_argument("--models", default="whisper-tiny.en,whisper-base")
    p.add_argument("--audio", action="store_true", help="also the shared clips, decoded, and their texts")
    p.add_argument("--reading", action="store_true", help="also the 231 s reading, decoded (implies --audio)")
    p.add_argument("--part-mb", type=float, default=28.0)
    u = sub.add_parser("unpack", help="unpack the models found in DIRs into transformers folders")
    u.add_argument("dirs", type=Path, nargs="+")
    u.add_argument("--out", type=Path, required=True)
    u.add_argument("--ct2", type=Path, metavar="MODELS",
                   help="also CTranslate2 model-store folders under MODELS (for SOTTO_MODELS_DIR)")
    u.add_argument("--quantization", default="float16", help="of the CTranslate2 weights (default float16)")
    args = parser.parse_args(argv)
    if args.command == "unpack":
        for folder in unpack(args.dirs, args.out, args.ct2, args.quantization):
            print(folder)
        return 0
    from core.asr.speculative.convert import ensure_converted
    from core.errors import SottoError
    from core.models import ModelStore

    store = ModelStore()
    for name in (m.strip() for m in args.models.split(",") if m.strip()):
        try:
            source = store.resolve(name)
            folder = ensure_converted(source)
        except SottoError as exc:  # a model not on this machine, or damaged: its sentence, not a traceback
            print(exc, file=sys.stderr)
            return 1
        ct2_folder = source if (source / "model.bin").exists() else None
        for path in pack_model(folder, args.out, int(args.part_mb * 1e6), ct2_folder):
            print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")
    if args.audio or args.reading:
        for path in pack_audio(args.out, args.reading):
            print(f"{path}  {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

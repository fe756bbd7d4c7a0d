"""faster-whisper (CTranslate2) Whisper folders → Hugging Face transformers format, once.

The bundled speech models ship in CTranslate2's ``model.bin`` format. The
speculative decoder needs per-position logits and a KV cache it can cut back,
which CTranslate2 does not expose, so it runs the same weights in PyTorch. This
module reads ``model.bin`` (CTranslate2's documented binary layout: a header,
then named tensors, then aliases), splits CTranslate2's fused attention
projections back into query/key/value, and writes a transformers
``WhisperForConditionalGeneration`` folder (``config.json`` + ``model.safetensors``
+ the tokenizer). The result is cached next to the source, keyed by the source's
size and modification time, so conversion happens once per model.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np

from ... import logger
from ...errors import ModelError

_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
CONVERTED_DIR = "hf-converted"


def read_ct2_model(path: Path) -> tuple[str, dict[str, np.ndarray]]:
    """The spec name and the tensors (aliases resolved) of a CTranslate2 ``model.bin``."""
    data = Path(path).read_bytes()
    pos = 0

    def unpack(fmt: str):
        nonlocal pos
        value = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal pos
        n = unpack("H")
        text = data[pos:pos + n - 1].decode("utf-8")
        pos += n
        return text

    try:
        version = unpack("I")
        if version < 5:
            raise ModelError(f"{path} uses CTranslate2 binary version {version}; convert it with a newer CTranslate2.")
        spec = string()
        unpack("I")  # spec revision
        tensors: dict[str, np.ndarray] = {}
        for _ in range(unpack("I")):
            name = string()
            shape = tuple(unpack("I") for _ in range(unpack("B")))
            dtype_id = unpack("B")
            nbytes = unpack("I")
            if dtype_id not in _DTYPES:
                raise ModelError(f"{path} holds {name} in a type Sotto cannot read (CTranslate2 type {dtype_id}); "
                                 "use a float16 or float32 conversion.")
            array = np.frombuffer(data, dtype=_DTYPES[dtype_id], count=nbytes // np.dtype(_DTYPES[dtype_id]).itemsize,
                                  offset=pos)
            tensors[name] = array.reshape(shape) if shape else array.reshape(())
            pos += nbytes
        for _ in range(unpack("I")):
            alias, target = string(), string()
            tensors[alias] = tensors[target]
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ModelError(f"{path} is not a readable CTranslate2 model ({exc}).") from exc
    return spec, tensors


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.astype(np.float32))


def ct2_to_hf_state(tensors: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict]:
    """transformers Whisper parameter names → arrays, and the matching config values."""
    if any(name.endswith("weight_scale") for name in tensors):
        raise ModelError("This speech model is quantized (int8); the speculative engine needs a float16 or "
                         "float32 model (e.g. the bundled ones).")
    state: dict[str, np.ndarray] = {}
    d_model = tensors["encoder/conv1/weight"].shape[0]

    def norm(src: str, dst: str) -> None:
        state[f"{dst}.weight"] = _f32(tensors[f"{src}/gamma"])
        state[f"{dst}.bias"] = _f32(tensors[f"{src}/beta"])

    def linear(src: str, dst: str, bias: bool = True) -> None:
        state[f"{dst}.weight"] = _f32(tensors[f"{src}/weight"])
        if bias:
            state[f"{dst}.bias"] = _f32(tensors[f"{src}/bias"])

    def split_qkv(src: str, dst: str, parts: tuple[str, ...]) -> None:
        w, b = _f32(tensors[f"{src}/weight"]), _f32(tensors[f"{src}/bias"])
        for i, part in enumerate(parts):
            state[f"{dst}.{part}_proj.weight"] = np.ascontiguousarray(w[i * d_model:(i + 1) * d_model])
            if part != "k":  # Whisper's key projections have no bias (CTranslate2 stores zeros)
                state[f"{dst}.{part}_proj.bias"] = np.ascontiguousarray(b[i * d_model:(i + 1) * d_model])

    counts = {}
    for side in ("encoder", "decoder"):
        n = 0
        while f"{side}/layer_{n}/ffn/linear_0/weight" in tensors:
            n += 1
        counts[side] = n
        for i in range(n):
            src, dst = f"{side}/layer_{i}", f"model.{side}.layers.{i}"
            split_qkv(f"{src}/self_attention/linear_0", f"{dst}.self_attn", ("q", "k", "v"))
            linear(f"{src}/self_attention/linear_1", f"{dst}.self_attn.out_proj")
            norm(f"{src}/self_attention/layer_norm", f"{dst}.self_attn_layer_norm")
            if side == "decoder":
                linear(f"{src}/attention/linear_0", f"{dst}.encoder_attn.q_proj")
                split_qkv(f"{src}/attention/linear_1", f"{dst}.encoder_attn", ("k", "v"))
                linear(f"{src}/attention/linear_2", f"{dst}.encoder_attn.out_proj")
                norm(f"{src}/attention/layer_norm", f"{dst}.encoder_attn_layer_norm")
            linear(f"{src}/ffn/linear_0", f"{dst}.fc1")
            linear(f"{src}/ffn/linear_1", f"{dst}.fc2")
            norm(f"{src}/ffn/layer_norm", f"{dst}.final_layer_norm")
        norm(f"{side}/layer_norm", f"model.{side}.layer_norm")
        state[f"model.{side}.embed_positions.weight"] = _f32(tensors[f"{side}/position_encodings/encodings"])
    for conv in ("conv1", "conv2"):
        linear(f"encoder/{conv}", f"model.encoder.{conv}")
    state["model.decoder.embed_tokens.weight"] = _f32(tensors["decoder/embeddings/weight"])
    config = {
        "d_model": int(d_model),
        "num_mel_bins": int(tensors["encoder/conv1/weight"].shape[1]),
        "encoder_layers": counts["encoder"],
        "decoder_layers": counts["decoder"],
        "encoder_attention_heads": int(tensors["encoder/num_heads"]),
        "decoder_attention_heads": int(tensors["decoder/num_heads"]),
        "encoder_ffn_dim": int(tensors["encoder/layer_0/ffn/linear_0/weight"].shape[0]),
        "decoder_ffn_dim": int(tensors["decoder/layer_0/ffn/linear_0/weight"].shape[0]),
        "vocab_size": int(tensors["decoder/embeddings/weight"].shape[0]),
        "max_source_positions": int(tensors["encoder/position_encodings/encodings"].shape[0]),
        "max_target_positions": int(tensors["decoder/position_encodings/encodings"].shape[0]),
    }
    return state, config


def _special_ids(tokenizer_json: Path) -> dict[str, int]:
    vocab = {}
    data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    for tok in data.get("added_tokens", []):
        vocab[tok["content"]] = tok["id"]
    return vocab


def convert_ct2_whisper(source: Path, dest: Path) -> Path:
    """Write a transformers Whisper folder at ``dest`` from the CTranslate2 folder ``source``."""
    from safetensors.numpy import save_file

    source, dest = Path(source), Path(dest)
    spec, tensors = read_ct2_model(source / "model.bin")
    if spec != "WhisperSpec":
        raise ModelError(f"{source} holds a {spec} model, not Whisper.")
    state, dims = ct2_to_hf_state(tensors)
    ct2_config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    special = _special_ids(source / "tokenizer.json")
    sot = special["<|startoftranscript|>"]
    eot = special["<|endoftext|>"]
    multilingual = dims["vocab_size"] >= 51865
    config = {
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        **dims,
        "activation_function": "gelu",
        "scale_embedding": False,
        "tie_word_embeddings": True,
        "decoder_start_token_id": sot,
        "bos_token_id": eot,
        "eos_token_id": eot,
        "pad_token_id": eot,
        "suppress_tokens": ct2_config.get("suppress_ids", []),
        "begin_suppress_tokens": ct2_config.get("suppress_ids_begin", []),
        "alignment_heads": ct2_config.get("alignment_heads", []),
        "lang_ids": ct2_config.get("lang_ids", []),
        "multilingual": multilingual,
        "torch_dtype": "float32",
        "converted_from": "ctranslate2",
    }
    staging = dest.with_name(dest.name + ".staging")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        save_file(state, str(staging / "model.safetensors"), metadata={"format": "pt"})
        (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        shutil.copy(source / "tokenizer.json", staging / "tokenizer.json")
        stamp = _source_stamp(source)
        (staging / "source.json").write_text(json.dumps(stamp) + "\n", encoding="utf-8")
        shutil.rmtree(dest, ignore_errors=True)
        staging.replace(dest)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ModelError(f"Could not write the converted speech model to {dest} ({exc.strerror or exc}); "
                         "check the free disk space.") from exc
    logger.info("converted %s to transformers format in %s", source, dest)
    return dest


def _source_stamp(source: Path) -> dict:
    st = (source / "model.bin").stat()
    return {"path": str(source.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def converted_path(source: Path, cache_root: Path | None = None) -> Path:
    """Where the converted copy of ``source`` lives (inside the model's own store folder)."""
    source = Path(source)
    root = cache_root or source
    return root / CONVERTED_DIR


def ensure_converted(source: Path, cache_root: Path | None = None) -> Path:
    """A transformers folder for the Whisper model at ``source`` (converted once, then reused).

    A folder that already is in transformers format (``config.json`` with
    ``model_type`` and weights) is returned as is.
    """
    source = Path(source)
    config = source / "config.json"
    if config.exists() and not (source / "model.bin").exists():
        return source  # already a transformers folder
    if not (source / "model.bin").exists():
        raise ModelError(f"{source} holds no Whisper model (no model.bin or transformers weights).")
    dest = converted_path(source, cache_root)
    stamp_file = dest / "source.json"
    if stamp_file.exists():
        try:
            if json.loads(stamp_file.read_text()) == _source_stamp(source):
                return dest
        except (OSError, json.JSONDecodeError):
            pass
    return convert_ct2_whisper(source, dest)

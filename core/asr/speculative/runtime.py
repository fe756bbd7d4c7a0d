"""Whisper in PyTorch (transformers) with a KV cache that can be cut back.

:class:`WhisperRunner` owns one model: it computes log-Mel features (the same
feature extractor as faster-whisper), runs the encoder once per audio window,
and opens :class:`DecoderState` objects that append tokens (one or many per
forward pass, with logits for every appended position) and truncate the
self-attention cache to any earlier length. Greedy decoding and the
speculative decoder are built on these two operations.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import logger
from ...errors import ModelError
from ...text import SPOKEN_LANGUAGES
from ..engine import WHISPER_SECONDS, encoder_frames_rule
from .convert import ensure_converted

N_SAMPLES = 30 * 16000  # Whisper's fixed 30 s window
HOP = 160  # samples per feature frame


@dataclass
class SpecialTokens:
    """Whisper's control tokens for one tokenizer."""

    sot: int
    eot: int
    sot_prev: int
    transcribe: int
    no_timestamps: int
    timestamp_begin: int
    languages: dict[str, int]


NOT_INCLUDED = ("The speculative speech engine is not included in this build of Sotto; "
                "set asr.engine to faster-whisper (the default).")


def _torch():
    try:
        import torch
    except ImportError as exc:
        if getattr(sys, "frozen", False):  # an installed build made without PyTorch (the default)
            raise ModelError(NOT_INCLUDED) from exc
        raise ModelError("PyTorch is not installed; rerun the setup command from README.md.") from exc
    return torch


class WhisperRunner:
    """One Whisper model in PyTorch: features, encoder, and cache-truncating decoder states."""

    def __init__(self, model_path: str | Path, device: str = "cpu", threads: int = 0, name: str | None = None,
                 quantize: bool = False, dtype: str = "auto", encoder_seconds: float = WHISPER_SECONDS) -> None:
        """Load (converting a CTranslate2 folder once). ``quantize`` makes the decoder's linear layers
        int8 on the CPU: about 2.5× faster steps, for a drafter, whose tokens are only proposals
        (float32 models only). ``device`` is ``auto`` (CUDA, then MPS, then the CPU) or a torch
        device; ``dtype`` is ``auto`` (float32 on the CPU, float16 on a GPU: see
        :func:`core.compute.torch_dtype_name`), ``float32``, ``float16`` or ``bfloat16``: the
        weights, the features, the encoder output and the decoder's activations are in it, the
        logits are computed in float32 (:meth:`logits`). ``encoder_seconds`` is
        ``asr.speculative_encoder_seconds``: the encoder reads the window plus 2 s of padding, at
        least that many seconds (:func:`core.asr.engine.encoder_frames_rule`; 30, the default:
        Whisper's own 30 s)."""
        torch = _torch()
        from tokenizers import Tokenizer
        from transformers import WhisperConfig, WhisperForConditionalGeneration
        from transformers.utils import logging as hf_logging

        from ...compute import torch_device, torch_dtype_name

        hf_logging.disable_progress_bar()

        source = Path(model_path)
        self.path = ensure_converted(source)
        self.name = name or source.name
        if threads:
            torch.set_num_threads(threads)
        try:
            config = WhisperConfig.from_pretrained(str(self.path))
            self.model = WhisperForConditionalGeneration.from_pretrained(
                str(self.path), config=config, dtype=torch.float32, attn_implementation="sdpa")
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelError(f"The speech model in {self.path} could not be loaded ({exc}).") from exc
        self.model.eval()
        self.encoder_seconds = min(float(encoder_seconds), WHISPER_SECONDS)
        self.encoder_frames = encoder_frames_rule(encoder_seconds)
        self.device = torch.device(torch_device(device))
        self.dtype_name = torch_dtype_name(dtype, self.device.type)
        self.dtype = getattr(torch, self.dtype_name)
        self.model.to(device=self.device, dtype=self.dtype)
        if self.device.type == "cuda":
            # cuDNN's SDPA kernel pays a large one-off cost for every new attention shape, and
            # speculative passes keep making new ones (draft and cache lengths vary), which ate most of
            # the speed-up; the flash / memory-efficient / math kernels instead keep the decodes lossless
            # (`python -m bench.gpu`, docs/BENCHMARKS.md). Process-wide, as torch.backends settings are.
            torch.backends.cuda.enable_cudnn_sdp(False)
        self.quantized = quantize and self.device.type == "cpu" and self.dtype == torch.float32
        if self.quantized:
            self._quantize_decoder()
        # Logits in float32 from a float32 copy of the output projection: in bfloat16, logits of
        # 16–32 are 0.125 apart (float16: 0.016), so top-2 gaps and ties would be rounding artefacts.
        self._head = (None if self.quantized or self.dtype == torch.float32
                      else self.model.proj_out.weight.detach().float())
        raw = json.loads((self.path / "config.json").read_text(encoding="utf-8"))
        self.tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self.vocab_size = int(raw["vocab_size"])
        self.multilingual = self.vocab_size >= 51865
        self.special = self._special_tokens()
        self.suppress = sorted({int(t) for t in raw.get("suppress_tokens") or [] if 0 <= int(t) < self.vocab_size})
        self.suppress_begin = sorted({int(t) for t in raw.get("begin_suppress_tokens") or []
                                      if 0 <= int(t) < self.vocab_size})
        self.num_mel_bins = int(raw["num_mel_bins"])
        self.max_target_positions = int(raw["max_target_positions"])
        layers, n_heads = int(raw["decoder_layers"]), int(raw["decoder_attention_heads"])
        self.alignment_heads = [tuple(map(int, h)) for h in raw.get("alignment_heads") or []] or [
            (layer, head) for layer in range(layers // 2, layers) for head in range(n_heads)]
        from faster_whisper.feature_extractor import FeatureExtractor

        self._features = FeatureExtractor(feature_size=self.num_mel_bins)
        self._suppress_mask = torch.zeros(self.vocab_size, dtype=torch.bool)
        self._suppress_mask[self.suppress] = True
        self._suppress_mask[self.special.timestamp_begin:] = True  # no timestamps in this mode
        self._suppress_mask = self._suppress_mask.to(self.device)
        logger.info("torch whisper %s loaded from %s on %s in %s", self.name, self.path, self.device,
                    self.dtype_name + (" (int8 decoder)" if self.quantized else ""))

    def _quantize_decoder(self) -> None:
        import warnings

        torch = _torch()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's dynamic quantization warns about its future move
            quantize = torch.ao.quantization.quantize_dynamic
            self.model.model.decoder = quantize(self.model.model.decoder, {torch.nn.Linear}, dtype=torch.qint8)
            self.model.proj_out = quantize(torch.nn.Sequential(self.model.proj_out), {torch.nn.Linear},
                                           dtype=torch.qint8)[0]

    # -- tokens --------------------------------------------------------------------------------
    def _special_tokens(self) -> SpecialTokens:
        tok = self.tokenizer

        def tid(text: str) -> int:
            value = tok.token_to_id(text)
            if value is None:
                raise ModelError(f"The tokenizer of {self.name} has no {text} token.")
            return value

        languages = {}
        for code in SPOKEN_LANGUAGES:
            value = tok.token_to_id(f"<|{code}|>")
            if value is not None:
                languages[code] = value
        return SpecialTokens(
            sot=tid("<|startoftranscript|>"), eot=tid("<|endoftext|>"), sot_prev=tid("<|startofprev|>"),
            transcribe=tid("<|transcribe|>"), no_timestamps=tid("<|notimestamps|>"),
            timestamp_begin=tid("<|notimestamps|>") + 1, languages=languages,
        )

    def encode_text(self, text: str) -> list[int]:
        """Text tokens (no special tokens)."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode_text(self, tokens: list[int]) -> str:
        """Text of text tokens (special tokens dropped)."""
        return self.tokenizer.decode([t for t in tokens if t < self.special.eot], skip_special_tokens=True)

    def prompt(self, previous_text: str = "", language: str | None = "en") -> list[int]:
        """The decoder prompt: earlier text (if any), start of transcript, language, task, no timestamps."""
        sp = self.special
        tokens: list[int] = []
        if previous_text.strip():
            prev = self.encode_text(" " + previous_text.strip())[-(self.max_target_positions // 2 - 1):]
            tokens += [sp.sot_prev, *prev]
        tokens.append(sp.sot)
        if self.multilingual:
            tokens += [sp.languages.get(language or "en", sp.languages.get("en", sp.sot)), sp.transcribe]
        tokens.append(sp.no_timestamps)
        return tokens

    # -- model passes ----------------------------------------------------------------------------
    def features(self, audio: np.ndarray) -> object:
        """Log-Mel features of ``audio`` (16 kHz mono), padded as Whisper pads a window to 30 s
        and cut to the frames the encoder reads (:attr:`encoder_frames`)."""
        torch = _torch()
        audio = np.asarray(audio, dtype=np.float32)[:N_SAMPLES]
        mel = self._features(audio, padding=N_SAMPLES - audio.shape[0] if audio.shape[0] < N_SAMPLES else 0)
        mel = mel[:, :3000]
        if mel.shape[1] < 3000:
            mel = np.pad(mel, ((0, 0), (0, 3000 - mel.shape[1])))
        if self.encoder_frames is not None:
            mel = mel[:, :self.encoder_frames(-(-audio.shape[0] // HOP))]
        return torch.from_numpy(np.ascontiguousarray(mel)).unsqueeze(0).to(self.device, dtype=self.dtype)

    def encode(self, audio: np.ndarray):
        """The encoder output for one window of audio (one row per 20 ms the encoder reads)."""
        torch = _torch()
        features = self.features(audio)
        with torch.inference_mode():
            if features.shape[-1] == 3000:
                return self.model.model.encoder(features).last_hidden_state
            return self._encode_short(features)

    def _encode_short(self, features):
        """transformers' Whisper encoder on fewer than 3000 frames, which its ``forward`` refuses:
        the same layers in the same order (convolutions, the first positions' embeddings, the
        attention blocks, the final norm). On 3000 frames it equals ``forward`` bit for bit
        (tests/test_latency.py); inference only (no dropout)."""
        torch = _torch()
        encoder = self.model.model.encoder
        gelu = torch.nn.functional.gelu
        hidden = gelu(encoder.conv2(gelu(encoder.conv1(features)))).permute(0, 2, 1)
        positions = torch.arange(hidden.shape[1], device=hidden.device)
        hidden = hidden + encoder.embed_positions(positions)
        for layer in encoder.layers:
            hidden = layer(hidden, None)
        return encoder.layer_norm(hidden)

    def logits(self, hidden):
        """float32 logits of decoder hidden states (rows × d_model, in the model's dtype)."""
        if self._head is None:
            return self.model.proj_out(hidden).float()
        return hidden.float() @ self._head.T

    def start(self, encoder_output) -> DecoderState:
        """A fresh decoder state over ``encoder_output``."""
        return DecoderState(self, encoder_output)

    def process(self, logits, first_step: bool):
        """Apply Whisper's token suppression to raw logits (in place; rows or one row)."""
        logits[..., self._suppress_mask] = float("-inf")
        if first_step and self.suppress_begin:
            logits[..., self.suppress_begin] = float("-inf")
        return logits


class DecoderState:
    """A decoder KV cache over one encoder output; append tokens, get logits, truncate."""

    def __init__(self, runner: WhisperRunner, encoder_output) -> None:
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        self.runner = runner
        self.encoder_output = encoder_output
        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        self.tokens: list[int] = []
        self.passes = 0

    def append(self, tokens: list[int], logits_from: int | None = None, parents: list[int] | None = None):
        """Feed ``tokens`` in one forward pass; returns float32 logits (torch) of the last token,
        or of ``tokens[logits_from:]`` (shape (n, vocab)). Suppression is not applied here.

        With ``parents`` the tokens are a tree (``parents[i]`` is the index of token i's
        parent among ``tokens``, -1 for the cached text): each token sees the cache and
        its own ancestors only, at the position its depth gives. Afterwards keep one
        path with :meth:`keep`."""
        torch = _torch()
        if not tokens:
            raise ValueError("nothing to append")
        runner = self.runner
        with torch.inference_mode():
            ids = torch.tensor([tokens], dtype=torch.long, device=runner.device)
            extra = {}
            if parents is not None:
                extra = self._tree_inputs(parents)
            out = runner.model.model.decoder(
                input_ids=ids, encoder_hidden_states=self.encoder_output, past_key_values=self.cache, use_cache=True,
                **extra)
            self.cache = out.past_key_values
            hidden = out.last_hidden_state[0]
            start = len(tokens) - 1 if logits_from is None else logits_from
            logits = runner.logits(hidden[start:])
        self.tokens.extend(tokens)
        self.passes += 1
        return logits[-1] if logits_from is None else logits

    def _tree_inputs(self, parents: list[int]) -> dict:
        """Position ids and an additive 4-D attention mask for a token tree after the cache.

        The mask is in the model's dtype: SDPA adds it to the attention scores, and a float32 mask
        with float16/bfloat16 queries on CUDA gave NaN (float16) or logits off by up to 26
        (bfloat16); in the model's dtype a tree pass equals a plain pass."""
        torch = _torch()
        cached, n = len(self.tokens), len(parents)
        depth = [0] * n
        allowed = torch.zeros((n, cached + n), dtype=torch.bool)
        allowed[:, :cached] = True
        for i, parent in enumerate(parents):
            if not -1 <= parent < i:
                raise ValueError("a tree's parents must come before their children")
            allowed[i, cached + i] = True
            if parent >= 0:
                depth[i] = depth[parent] + 1
                allowed[i, cached:] |= allowed[parent, cached:]
        dtype = self.runner.dtype
        mask = torch.zeros((1, 1, n, cached + n), dtype=dtype)
        mask.masked_fill_(~allowed, torch.finfo(dtype).min)  # transformers' convention: no NaN from -inf - -inf
        positions = torch.tensor([[cached + d for d in depth]], dtype=torch.long)
        device = self.runner.device
        return {"attention_mask": mask.to(device), "position_ids": positions.to(device)}

    def keep(self, n: int, path: list[int]) -> None:
        """After a tree append: keep the first ``n`` tokens and then the tree nodes ``path``
        (indices into the tokens appended after those ``n``), dropping the rest."""
        torch = _torch()
        if path == list(range(len(path))):
            self.truncate(n + len(path))
            return
        index = torch.tensor(list(range(n)) + [n + i for i in path], dtype=torch.long, device=self.runner.device)
        for layer in self.cache.self_attention_cache.layers:
            layer.keys = layer.keys.index_select(-2, index)
            layer.values = layer.values.index_select(-2, index)
        self.tokens = self.tokens[:n] + [self.tokens[n + i] for i in path]

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` tokens' keys and values (the cross-attention cache is kept)."""
        remove = len(self.tokens) - n
        if remove > 0:
            self.cache.self_attention_cache.crop(-remove)  # transformers 5: a negative count removes tokens
            del self.tokens[n:]

    def __len__(self) -> int:
        return len(self.tokens)

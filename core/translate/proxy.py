"""How fast a catalogue translator would run here, before its download: random-weight proxies.

No bigger translator need be downloaded to know its speed: llama.cpp's time for a token depends on
the model's architecture, its dimensions and the quantisation of each tensor, not on the weights'
values. A proxy is a GGUF of the catalogue model's exact shape (:class:`TranslatorShape`: its
llama.cpp architecture (Qwen2, Llama, Gemma 3, Hunyuan dense), hidden size, heads, KV heads, head size,
feed-forward size, vocabulary, tied embeddings) with random weights,
written with the ``gguf`` package (as Q8_0, whose random bytes need no quantising) and quantised by
llama.cpp's own quantiser to Q4_K_M, the type the catalogue downloads, so every tensor gets the type
it has in the real file (Q6_K for the tied embeddings and half the layers' ``attn_v``/``ffn_down``).
Loading it with the bundled llama-cpp-python also proves the architecture loads.

**Measured.** A workload as :data:`core.models.advice.LIVE_TOKENS_PER_S` counts it: a prompt of
:attr:`Workload.prompt_tokens` (the app's chat prompt with a sentence: about 100 tokens), evaluated
in the translator's prompt chunks, then :attr:`Workload.output_tokens` greedy tokens one at a time,
through :class:`~core.translate.llama_runner.LlamaRunner` with the app's threads and GPU layers;
tokens per second = output tokens / (prompt + decoding seconds).

**Extrapolated in depth.** Proxies of 2 and 4 layers (full width and vocabulary: 0.25 and 0.31 GB
for the 1.5B shape, 0.35 and 0.44 GB for the 3B) are timed in turns over a few rounds, and the full
depth is predicted as ``t(L) = t(2) + (L - 2)·(t(4) - t(2))/2`` per round (the median over rounds
kept). That is sound because the layers run one after another and do identical work (same tensors,
same cache length), while what does not grow with depth (embedding row, final norm, the output
projection over the whole vocabulary, sampling, Python) is the same at any depth; the quantiser
gives the more precise Q6_K to half the layers at 2 and 4 layers as at 28 and 36, so the per-layer
cost is the full model's average (the file sizes extrapolate to the full-depth proxy's to 0.01%).
Checked once against a full-depth proxy of the 1.5B shape (:func:`measure` with ``full_depth``;
0.98 GB, and 1.6 GB for its Q8_0 source while it is quantised) on the busy 2-core machine of
docs/BENCHMARKS.md: predicted within 1% of it with the fastest of three runs per round counting, 26%
off with one run per round. The catalogue's Q4_K_M files are larger than the proxies (1.12 and 2.1
GB against 0.98 and 1.93 GB) by the size of a Q4_K copy of the embedding (0.13 and 0.17 GB), as if
they stored the embedding apart from its Q6_K use as the output projection: a token's work is the
same either way.

Proxies are kept under ``models_dir()/translator-proxies`` (a cache: delete it freely) by shape,
depth and :data:`PROXY_VERSION`; one that does not load (damaged) is built again. The speeds are
stored per machine by :func:`core.models.advice.record_proxy_speeds`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import logger
from ..errors import Interrupted, ModelError, SottoError
from ..models.store import StatusCallback
from ..paths import models_dir
from .llama_runner import PROMPT_CHUNK, LlamaRunner, _route_native_log

# In every proxy's file name: a change to how proxies are built makes new ones rather than reusing old ones.
PROXY_VERSION = 1
DEPTHS = (2, 4)  # the layers of the timed proxies


@dataclass(frozen=True)
class TranslatorShape:
    """The dimensions of a catalogue translator that set its speed (its published config.json), in one of
    the architectures llama.cpp runs them as (:data:`ARCHITECTURES`)."""

    name: str  # the catalogue name
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads
    ffn: int  # intermediate_size (the one the model runs: LFM2's after its own adjustment)
    vocab: int  # vocab_size (the embedding's rows)
    tied: bool = True  # tie_word_embeddings: the output projection is the token embedding
    context: int = 32768  # max_position_embeddings
    rope_base: float = 1_000_000.0
    rms_eps: float = 1e-6
    architecture: str = "qwen2"
    head_dim_: int | None = None  # head_dim where it is not hidden / heads (Gemma 3)
    sliding_window: int | None = None  # Gemma 3: its local layers' window

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"no proxy is written for the {self.architecture} architecture")

    @property
    def head_dim(self) -> int:
        return self.head_dim_ or self.hidden // self.heads

    def key(self, layers: int) -> str:
        """The cache file's name of a proxy with ``layers`` layers."""
        extra = f"-d{self.head_dim}" if self.head_dim_ else ""
        return (f"{self.architecture}-h{self.hidden}-a{self.heads}-kv{self.kv_heads}-f{self.ffn}-v{self.vocab}"
                f"{extra}{'-tied' if self.tied else ''}-l{layers}-q4_k_m-p{PROXY_VERSION}.gguf")

    def tensors(self, layers: int) -> dict[str, tuple[int, ...]]:
        """Each tensor's name and shape (rows, columns: numpy order) as the GGUF converter writes them."""
        h, d, arch = self.hidden, self.head_dim, self.architecture
        q, kv = self.heads * d, self.kv_heads * d
        out: dict[str, tuple[int, ...]] = {"token_embd.weight": (self.vocab, h), "output_norm.weight": (h,)}
        if not self.tied:
            out["output.weight"] = (self.vocab, h)
        for i in range(layers):
            b = f"blk.{i}."
            out |= {b + "attn_norm.weight": (h,), b + "attn_q.weight": (q, h), b + "attn_k.weight": (kv, h),
                    b + "attn_v.weight": (kv, h), b + "attn_output.weight": (h, q)}
            if arch == "qwen2":
                out |= {b + "attn_q.bias": (q,), b + "attn_k.bias": (kv,), b + "attn_v.bias": (kv,)}
            if arch in ("gemma3", "hunyuan-dense"):
                out |= {b + "attn_q_norm.weight": (d,), b + "attn_k_norm.weight": (d,)}
            if arch == "gemma3":
                out[b + "post_attention_norm.weight"] = (h,)
            out |= {b + "ffn_norm.weight": (h,), b + "ffn_gate.weight": (self.ffn, h),
                    b + "ffn_up.weight": (self.ffn, h), b + "ffn_down.weight": (h, self.ffn)}
            if arch == "gemma3":
                out[b + "post_ffw_norm.weight"] = (h,)
        return out

    def parameters(self, layers: int | None = None) -> int:
        """Weights of the model with ``layers`` layers (its own depth if None), the tied embedding once."""
        return sum(int(np.prod(s)) for s in self.tensors(self.layers if layers is None else layers).values())


# the architectures proxies are written in (llama.cpp's names)
ARCHITECTURES = ("qwen2", "llama", "gemma3", "hunyuan-dense")

# Each from the model's published config.json (the GGUF's metadata where noted); the parameter counts they
# give are the published ones (tests/test_translator_proxy.py):
# - Qwen/Qwen2.5-1.5B-Instruct and -3B-Instruct: both tie their embeddings (1.54B and 3.09B).
# - tencent/Hy-MT2-1.8B: HunYuanDenseV1 (llama.cpp's hunyuan-dense), head_dim 128, tied, qk norm (1.79B).
# - utter-project/EuroLLM-1.7B-Instruct: Llama, embeddings not tied (1.66B).
# - google/translategemma-4b-it: Gemma 3 4B's text model (its GGUF's metadata: 34 layers, head_dim 256,
#   sliding window 1024; Gemma 3's tied 262,208-token embedding): 3.88B.
# Not in the catalogue: LFM2 translators (LiquidAI/LFM2-350M-ENJP-MT): their short-convolution layers keep a
# running state that llama.cpp can drop only whole, not roll back to a token, which SSBD and prefix reuse do
# at every update.
SHAPES: dict[str, TranslatorShape] = {
    "qwen2.5-1.5b-instruct": TranslatorShape("qwen2.5-1.5b-instruct", 28, 1536, 12, 2, 8960, 151936),
    "qwen2.5-3b-instruct": TranslatorShape("qwen2.5-3b-instruct", 36, 2048, 16, 2, 11008, 151936),
    "hy-mt2-1.8b": TranslatorShape("hy-mt2-1.8b", 32, 2048, 16, 4, 6144, 120818, context=262144, rope_base=10000.0,
                                   rms_eps=1e-5, architecture="hunyuan-dense"),
    "eurollm-1.7b-instruct": TranslatorShape("eurollm-1.7b-instruct", 24, 2048, 16, 8, 5632, 128000, tied=False,
                                             context=4096, rope_base=10000.0, rms_eps=1e-5, architecture="llama"),
    "translategemma-4b": TranslatorShape("translategemma-4b", 34, 2560, 8, 4, 10240, 262208, context=131072,
                                         architecture="gemma3", head_dim_=256, sliding_window=1024),
}


def proxy_dir() -> Path:
    """Where the proxies are kept (inside the model store, a cache)."""
    return models_dir() / "translator-proxies"


# -- writing -----------------------------------------------------------------------------------------
_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def _byte_tokens() -> list[str]:
    """GPT-2's byte-level alphabet (every byte as one printable character), in byte order: with these
    any text tokenizes (a character a token), as the load-time checks need."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return [chars[b] for b in range(256)]


def _vocabulary(size: int) -> tuple[list[str], list[int], list[str]]:
    """Tokens, their types and merges for a byte-level BPE vocabulary of ``size`` entries: the 256
    bytes, a few merged pairs, Qwen's three control tokens and padding (the text is irrelevant to speed)."""
    tokens = _byte_tokens()
    merges = ["Ġ t", "h e", "Ġt he", "i n", "a n"]
    tokens += [m.replace(" ", "") for m in merges]
    types = [1] * len(tokens)
    tokens += list(_SPECIALS)
    types += [3] * len(_SPECIALS)  # control
    if size < len(tokens):
        raise ValueError(f"a vocabulary of {size} tokens is too small for a proxy")
    pad = size - len(tokens)
    tokens += [f"[PAD{i}]" for i in range(len(tokens), size)]
    types += [4] * pad  # user-defined, as the padding of Qwen's own GGUFs
    return tokens, types, merges


def _q8_0(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Random Q8_0 blocks (an f16 scale and 32 int8 weights each): weights of about ±0.02."""
    blocks = rows * (cols // 32)
    out = np.empty((blocks, 34), dtype=np.uint8)
    out[:, :2] = np.frombuffer(np.float16(0.02 / 64).tobytes(), dtype=np.uint8)
    out[:, 2:] = np.frombuffer(rng.bytes(blocks * 32), dtype=np.uint8).reshape(blocks, 32)
    return out.reshape(rows, (cols // 32) * 34)


def write_source(shape: TranslatorShape, layers: int, path: Path, seed: int = 0) -> None:
    """A random-weight GGUF of ``shape`` with ``layers`` layers, in Q8_0 (norms and biases in F32),
    written tensor by tensor (never more than one in memory)."""
    try:
        import gguf  # a development dependency: installers leave it out
    except ImportError as exc:
        raise SottoError("Timing the bigger translators needs the gguf package, which this installation "
                         "lacks; the advice uses estimates instead.") from exc

    rng = np.random.default_rng(seed)
    tensors = shape.tensors(layers)
    writer = gguf.GGUFWriter(str(path), shape.architecture)
    writer.add_name(f"random-weight proxy of {shape.name} ({layers} layers)")
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    if shape.head_dim_:
        writer.add_key_length(shape.head_dim)
        writer.add_value_length(shape.head_dim)
    if shape.sliding_window:
        writer.add_sliding_window(shape.sliding_window)
    writer.add_rope_freq_base(shape.rope_base)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q8_0))
    tokens, types, merges = _vocabulary(shape.vocab)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    first_special = tokens.index(_SPECIALS[0])
    writer.add_bos_token_id(first_special)
    writer.add_eos_token_id(first_special + 2)  # <|im_end|>, as the instruct models' GGUFs
    writer.add_pad_token_id(first_special)
    writer.add_add_bos_token(False)
    for name, dims in tensors.items():
        if len(dims) == 1:  # norms and biases
            writer.add_tensor_info(name, dims, np.dtype(np.float32), int(np.prod(dims)) * 4)
        else:
            rows, cols = dims
            writer.add_tensor_info(name, (rows, cols // 32 * 34), np.dtype(np.uint8), rows * cols // 32 * 34,
                                   raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for name, dims in tensors.items():
        if len(dims) == 1:
            base = 1.0 if name.endswith("norm.weight") else 0.0
            writer.write_tensor_data((base + 0.02 * rng.standard_normal(dims)).astype(np.float32))
        else:
            writer.write_tensor_data(_q8_0(rng, *dims))
    writer.close()


def quantize(source: Path, target: Path, threads: int = 0) -> None:
    """llama.cpp's quantiser: ``source`` to Q4_K_M at ``target``, each tensor typed as for a real model."""
    import llama_cpp

    _route_native_log()  # its progress lines go to the log file, not the terminal
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads or os.cpu_count() or 1
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.allow_requantize = True  # the source is Q8_0
    code = llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), params)
    if code != 0:
        raise ModelError(f"llama.cpp could not quantise the proxy {source.name} (error {code}).")


def proxy_size(shape: TranslatorShape, layers: int) -> int:
    """About how many bytes the Q8_0 source of a proxy takes (the Q4_K_M file about 60% of it)."""
    return int(shape.parameters(layers) * 34 / 32)


def build_proxy(shape: TranslatorShape, layers: int, root: Path | None = None, seed: int = 0) -> Path:
    """The Q4_K_M proxy of ``shape`` with ``layers`` layers (kept: built only where none is)."""
    root = root or proxy_dir()
    out = root / shape.key(layers)
    if out.is_file():
        return out
    root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(root).free
    need = proxy_size(shape, layers) * 1.7
    if free < need + 2**30:
        raise SottoError(f"The speed check needs about {need / 1e9:.1f} GB free in {root} for a model of "
                         f"{shape.name}'s shape; {free / 1e9:.1f} GB are free.")
    source = root / f"{out.name}.{os.getpid()}.source"
    staging = root / f"{out.name}.{os.getpid()}.staging"
    try:
        write_source(shape, layers, source, seed)
        quantize(source, staging)
        os.replace(staging, out)  # complete under its own name, or not there at all
    finally:
        source.unlink(missing_ok=True)
        staging.unlink(missing_ok=True)
    return out


# -- timing ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Workload:
    """One finished sentence as the app translates it: its prompt, then the translation's tokens."""

    prompt_tokens: int = 100
    output_tokens: int = 30


def load(path: Path, n_threads: int = 0, n_gpu_layers: int = 0) -> LlamaRunner:
    """A proxy loaded as the app loads a translator (its threads, GPU layers, no weight repacking)."""
    return LlamaRunner(path, n_ctx=512, n_threads=n_threads, n_gpu_layers=n_gpu_layers)


def time_workload(runner: LlamaRunner, workload: Workload, seed: int = 0) -> float:
    """Model seconds of one ``workload``: the prompt in the translator's chunks, then greedy tokens one
    at a time (end-of-sequence ignored: every model decodes as many)."""
    rng = np.random.default_rng(seed)
    prompt = [int(t) for t in rng.integers(0, 256, workload.prompt_tokens)]  # byte tokens: in every vocabulary
    runner.truncate(0)
    t0 = time.perf_counter()
    logits = runner.eval(prompt, chunk=PROMPT_CHUNK)
    for _ in range(workload.output_tokens):
        logits = runner.eval([int(np.argmax(logits))])
    seconds = time.perf_counter() - t0
    runner.truncate(0)
    return seconds


def extrapolate(seconds: dict[int, float], layers: int) -> float:
    """Seconds at ``layers`` layers from those at two depths (a layer costing at least nothing)."""
    (a, ta), (b, tb) = sorted(seconds.items())[:2]
    return ta + (layers - a) * max(0.0, (tb - ta) / (b - a))


@dataclass
class ProxySpeed:
    """A translator's speed here, from its proxies: output tokens per second of model time."""

    model: str
    tokens_per_s: float
    seconds: float  # one workload at full depth (predicted)
    per_layer_s: float  # one layer's share of it
    layers: int
    gpu_offload: bool
    prompt_tokens: int  # the workload timed
    output_tokens: int
    full_depth_tokens_per_s: float | None = None  # timed on a full-depth proxy (the check), where asked


def measure(models: list[str] | None = None, workload: Workload = Workload(), *, rounds: int = 3, burst: int = 3,
            n_threads: int = 0, n_gpu_layers: int = 0, root: Path | None = None, full_depth: bool = False,
            on_status: StatusCallback | None = None, abort: threading.Event | None = None,
            shapes: dict[str, TranslatorShape] | None = None) -> list[ProxySpeed]:
    """Build (or reuse) the 2- and 4-layer proxies of ``models`` (catalogue names; all of
    :data:`SHAPES` if None), time ``workload`` on each in turns over ``rounds`` rounds after a warm-up
    (in each, the fastest of ``burst`` runs back to back counts, so a moment's load from another
    program is dropped, as in :class:`core.asr.calibration.Timer`) and predict each full depth.
    ``full_depth``: also build and time a full-depth proxy of each (the extrapolation's check; removed
    afterwards: too big to keep). ``on_status(sentence, fraction)`` reports progress; setting ``abort``
    stops it (:class:`~core.errors.Interrupted`)."""
    shapes = shapes or SHAPES
    names = list(models or shapes)
    unknown = [n for n in names if n not in shapes]
    if unknown:
        raise SottoError(f"No proxy shape is known for {', '.join(unknown)}; known: {', '.join(shapes)}.")
    root = root or proxy_dir()

    def status(message: str, fraction: float | None) -> None:
        if on_status is not None:
            on_status(message, fraction)

    def check() -> None:
        if abort is not None and abort.is_set():
            raise Interrupted("The translator speed check was stopped.")

    plan = [(n, d) for n in names for d in DEPTHS]
    if full_depth:  # first: while its Q8_0 source is written and quantised, the disk holds nothing else new
        plan = [(n, shapes[n].layers) for n in names if shapes[n].layers not in DEPTHS] + plan
    runners: dict[tuple[str, int], LlamaRunner] = {}
    built: list[Path] = []
    try:
        for i, (name, depth) in enumerate(plan):
            check()
            shape = shapes[name]
            depth_words = f"{depth} layers"
            if (root / shape.key(depth)).is_file():
                how = "Loading"
            else:
                how = "Building"
                depth_words += "; once, kept in the model cache" if depth in DEPTHS else "; removed after timing"
            status(f"{how} a random-weight model of {name}'s shape ({depth_words})", 0.4 * i / len(plan))
            path = build_proxy(shape, depth, root)
            if depth not in DEPTHS:
                built.append(path)
            try:
                runners[(name, depth)] = load(path, n_threads, n_gpu_layers)
            except ModelError as exc:  # damaged on disk (truncated, edited): built again, once
                logger.warning("translator proxy %s did not load (%s); building it again", path.name, exc)
                path.unlink(missing_ok=True)
                runners[(name, depth)] = load(build_proxy(shape, depth, root), n_threads, n_gpu_layers)
        samples: dict[tuple[str, int], list[float]] = {key: [] for key in runners}
        for r in range(rounds + 1):
            for j, (key, runner) in enumerate(runners.items()):
                check()
                seconds = min(time_workload(runner, workload, seed=r) for _ in range(burst if r else 1))
                if r:  # round 0 warms up
                    samples[key].append(seconds)
                status("Timing them (speed does not depend on the weights)",
                       0.4 + 0.6 * (r * len(runners) + j + 1) / ((rounds + 1) * len(runners)))
    finally:
        offload = any(r.gpu_offload for r in runners.values())
        for runner in runners.values():
            runner.close()
        for path in built:
            path.unlink(missing_ok=True)
    out = []
    for name in names:
        shape = shapes[name]
        a, b = DEPTHS
        per_round = [extrapolate({a: sa, b: sb}, shape.layers)
                     for sa, sb in zip(samples[(name, a)], samples[(name, b)], strict=True)]
        seconds = statistics.median(per_round)
        per_layer = max(0.0, (statistics.median(samples[(name, b)]) - statistics.median(samples[(name, a)])) / (b - a))
        full = samples.get((name, shape.layers)) if shape.layers not in DEPTHS else None
        out.append(ProxySpeed(name, round(workload.output_tokens / seconds, 2), round(seconds, 4),
                              round(per_layer, 5), shape.layers, offload, workload.prompt_tokens,
                              workload.output_tokens,
                              round(workload.output_tokens / statistics.median(full), 2) if full else None))
    status("Done", 1.0)
    return out

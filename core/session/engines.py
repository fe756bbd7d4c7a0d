"""Build the engines named in settings from the model store (one instance per model), and the
options of everything else a session runs.

Settings reach the stages only through the typed objects made here. Read when a session starts:
:class:`ASREngineSpec` and :class:`TranslatorSpec` (what each engine is built from: a different
one needs the engine rebuilt) and :func:`streaming_options` (the transcriber). Changed live:
:class:`TranslatorKnobs` (how the translator decodes) and :class:`PolicyKnobs` (what the caption
policy shows). :mod:`core.settings` marks each field as applying at the next start or live, and
``tests/test_settings.py`` checks that these builders read only settings marked so.
:func:`engines_for_language` says which speech models a spoken language needs (the welcome and
Settings apply them with the language).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import logger
from ..asr.engine import ASREngine, FasterWhisperEngine
from ..asr.streaming import StreamingOptions
from ..captions.policy import CaptionPolicy
from ..compute import ct2_cuda_problem
from ..errors import ModelError, SettingsError
from ..models.store import ModelStore, StatusCallback
from ..settings import ASREngineKind, Settings, TranslationEngineKind, check_combination
from ..text import language_name
from ..translate.translator import LlamaTranslator, TranslatorOptions, bias_rules


@dataclass(frozen=True)
class ASREngineSpec:
    """What the speech engine is built from: the ``asr`` settings of the same names."""

    engine: ASREngineKind
    model: str
    drafter: str
    verifier: str
    draft_threshold: float
    max_draft: int
    sparse_tree: bool
    calibrate: bool
    compute_device: str
    compute_dtype: str
    encoder_seconds: float
    speculative_encoder_seconds: float
    verify_lines: bool
    cross_check: bool

    @classmethod
    def from_settings(cls, settings: Settings) -> ASREngineSpec:
        """The spec named in ``settings``."""
        return cls(**{f.name: getattr(settings.asr, f.name) for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class TranslatorSpec:
    """What the translator is built from (the spoken language is in its prompt)."""

    source_lang: str
    target: str
    model: str
    prompt_style: str
    clause_pieces: bool
    n_threads: int
    n_gpu_layers: int
    reuse_prefix: bool
    lookup: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> TranslatorSpec:
        """The spec named in ``settings``."""
        tr = settings.translation
        return cls(source_lang=settings.asr.language, target=tr.target, model=tr.model,
                   prompt_style=tr.prompt_style, clause_pieces=tr.clause_pieces, n_threads=tr.n_threads,
                   n_gpu_layers=tr.n_gpu_layers, reuse_prefix=tr.reuse_prefix, lookup=tr.lookup)


@dataclass(frozen=True)
class TranslatorKnobs:
    """The translator's live knobs: β (None for plain re-translation), the in-draft mask-k and
    where β applies."""

    beta: float | None
    draft_mask_k: int
    bias_scope: str

    @classmethod
    def from_settings(cls, settings: Settings) -> TranslatorKnobs:
        """The knobs set in ``settings``."""
        tr, cap = settings.translation, settings.captions
        return cls(beta=tr.beta if tr.engine == TranslationEngineKind.SSBD else None,
                   draft_mask_k=cap.mask_k if cap.mask_mode == "draft" else 0, bias_scope=tr.bias_scope)

    def apply_to(self, translator: LlamaTranslator) -> None:
        """Set these knobs on a running translator (it takes them at its next call)."""
        translator.configure(beta=self.beta, draft_mask_k=self.draft_mask_k, bias_scope=self.bias_scope)


@dataclass(frozen=True)
class PolicyKnobs:
    """What the caption policy shows, changed live: mask-k, the translation's own mask (0 when
    mask-k is applied in the translator's draft instead, None for the same as ``mask_k``), the whole
    line at a pause, and how the source's unconfirmed words are held back."""

    mask_k: int
    translation_mask_k: int | None
    show_at_pause: bool
    source_mask: str
    source_hold_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> PolicyKnobs:
        """The knobs set in ``settings``."""
        cap = settings.captions
        return cls(mask_k=cap.mask_k, translation_mask_k=0 if cap.mask_mode == "draft" else None,
                   show_at_pause=cap.show_at_pause, source_mask=cap.source_mask, source_hold_s=cap.source_hold_s)

    def apply_to(self, policy: CaptionPolicy) -> None:
        """Set these knobs on a policy (the caller holds the lock the policy is used under)."""
        for f in dataclasses.fields(self):
            setattr(policy, f.name, getattr(self, f.name))


# The speech settings a spoken language decides (what selects the engine and its models).
ENGINE_KEYS = ("asr.engine", "asr.model", "asr.verify_lines", "asr.verifier")
# A language other than English, where the speed check chose nothing installed: Whisper base streams alone
# (bundled and multilingual). It keeps up on two cores: 1.06 CPU-s per audio-s with translation in the
# live benchmark (docs/BENCHMARKS.md), where the English default takes 0.72 of the 2 the machine has.
BASE_ALONE = {"asr.engine": "faster-whisper", "asr.model": "whisper-base", "asr.verify_lines": False}
# With whisper-tiny downloaded: the English default's pair of shapes (tiny streams, base verifies each
# line), which keeps up wherever the default does.
TINY_VERIFIED = {"asr.engine": "faster-whisper", "asr.model": "whisper-tiny", "asr.verify_lines": True,
                 "asr.verifier": "whisper-base"}


@dataclass(frozen=True)
class LanguageEngines:
    """What choosing the spoken ``language`` sets besides it: the speech models (``changes``, empty when
    those in force understand it) and the sentence that tells the user."""

    language: str
    changes: dict[str, object] = field(default_factory=dict)
    sentence: str = ""

    def steps(self) -> list[tuple[str, object]]:
        """The changes and the language, in an order where every step is a valid combination on its own
        (the multilingual models before another language, English before its English-only models)."""
        language = [("asr.language", self.language)]
        changes = list(self.changes.items())
        return language + changes if english(self.language) else changes + language

    def apply_to(self, settings: Settings) -> Settings:
        """``settings`` with the language and its models."""
        for key, value in self.steps():
            settings = settings.with_value(key, value)
        return settings


def english(language: str) -> bool:
    """Whether the English-only models serve ``language`` (none set counts as English)."""
    return (language or "en") == "en"


def installed_in(store: ModelStore) -> Callable[[str], bool]:
    """Whether a catalogue model is on this machine or bundled (needs no download)."""

    def installed(name: str) -> bool:
        try:
            return store.status(name).state in ("ready", "bundled")
        except Exception:  # not in the catalogue, or a store that cannot be read: not usable offline
            return False

    return installed


def engine_words(values: dict[str, object] | Settings) -> str:
    """The speech models of ``values`` (engine settings, or all settings) in a few words."""
    if isinstance(values, Settings):
        values = {key: values.value(key) for key in ENGINE_KEYS}
    name = {k: str(values.get(k, "")).removeprefix("whisper-") for k in ("asr.model", "asr.verifier")}
    if str(values.get("asr.engine")) == ASREngineKind.SPECULATIVE:
        return f"Whisper {name['asr.verifier']} (speculative decoding)"
    if values.get("asr.verify_lines"):
        return f"Whisper {name['asr.model']} streaming and Whisper {name['asr.verifier']} checking each line"
    return f"Whisper {name['asr.model']} streaming alone"


def _understood(settings: Settings, language: str) -> bool:
    """Whether every speech model ``settings`` run understands ``language`` (check_combination's rule)."""
    try:
        check_combination(settings.with_value("translation.target", "none").with_value("asr.language", language))
    except SettingsError:
        return False
    return True


def _calibrated(calibration, multilingual: bool, installed: Callable[[str], bool]) -> dict[str, object] | None:
    """The saved speed check's choice, where it was made on this machine for this kind of language and
    every model it names is installed."""
    if calibration is None or not calibration.choice or english(calibration.language) == multilingual:
        return None
    from ..asr.calibration import same_machine

    chosen = {k: v for k, v in calibration.settings.items() if k in ENGINE_KEYS}
    models = [chosen.get("asr.model")] + ([chosen.get("asr.verifier")] if chosen.get("asr.verify_lines") else [])
    if not same_machine(calibration) or not all(isinstance(m, str) and installed(m) for m in models):
        return None
    return chosen


def engines_for_language(settings: Settings, language: str, installed: Callable[[str], bool],
                         calibration=None) -> LanguageEngines:
    """The speech models to use with the spoken ``language``.

    Another language than English, with an English-only model in force (tiny.en, the default): the
    saved speed check's choice for such a language on this machine (``calibration``, a
    :class:`core.asr.calibration.Calibration`) where its models are installed, else whisper-tiny
    verified by base where whisper-tiny is installed, else base alone (bundled). Back to English from
    one of those: the speed check's English choice, else the defaults. Anything else the user chose is
    kept where it understands the language."""
    name = language_name(language)
    current = {key: settings.value(key) for key in ENGINE_KEYS}
    automatic = [BASE_ALONE, TINY_VERIFIED]
    if calibration is not None and not english(calibration.language) and calibration.choice:
        automatic.append({k: v for k, v in calibration.settings.items() if k in ENGINE_KEYS})
    if english(language):
        if not any(all(current.get(k) == v for k, v in auto.items()) for auto in automatic):
            return LanguageEngines(language)
        default = Settings()
        restored = _calibrated(calibration, False, installed) or {k: default.value(k) for k in ENGINE_KEYS}
        changes = {k: v for k, v in restored.items() if current.get(k) != v}
        return LanguageEngines(language, changes, f"English: Sotto uses {engine_words(restored)} again, "
                                                  "the English setup.")
    if _understood(settings, language):
        return LanguageEngines(language, {}, f"Sotto uses {engine_words(settings)} for {name}.")
    chosen = _calibrated(calibration, True, installed)
    if chosen is not None:
        why = "the speed check's choice for this computer"
    elif installed("whisper-tiny"):
        chosen, why = TINY_VERIFIED, "the English default's sizes, so it keeps up where that does"
    else:
        chosen, why = BASE_ALONE, "bundled, and fast enough for live captions on two CPU cores"
    changes = {k: v for k, v in chosen.items() if current.get(k) != v}
    return LanguageEngines(language, changes, f"{name} needs a multilingual speech model: Sotto will use "
                                              f"{engine_words(chosen)} ({why}).")


def caption_policy(settings: Settings, target: str | None, speakers: tuple[str, ...]) -> CaptionPolicy:
    """The caption policy of a session translating into ``target`` (None: no translation), with one
    partial line per speaker."""
    knobs = PolicyKnobs.from_settings(settings)
    return CaptionPolicy(source_lang=settings.asr.language, target_lang=target, speakers=speakers,
                         **dataclasses.asdict(knobs))


def streaming_options(settings: Settings) -> StreamingOptions:
    """The streaming transcriber's options from settings (read when a session starts)."""
    asr = settings.asr
    return StreamingOptions(language=asr.language, min_chunk_s=asr.min_chunk_s, buffer_trim_s=asr.buffer_trim_s,
                            use_vad=asr.vad, vad_threshold=asr.vad_threshold,
                            vad_min_silence_s=asr.vad_min_silence_s, vad_level=asr.vad_level,
                            utterance_end_s=asr.utterance_end_s,
                            clause_min_words=asr.clause_min_words, max_line_words=asr.max_line_words,
                            pause_commit=asr.pause_commit)


def create_asr_engine(settings: Settings, store: ModelStore, on_status: StatusCallback | None = None) -> ASREngine:
    """The speech recogniser selected in settings."""
    spec = ASREngineSpec.from_settings(settings)
    if spec.engine == ASREngineKind.SPECULATIVE:
        from ..asr.speculative.decoder import SpeculativeOptions
        from ..asr.speculative.engine import SpeculativeEngine

        drafter = store.resolve(spec.drafter, on_status)
        verifier = store.resolve(spec.verifier, on_status)
        if on_status:
            on_status(f"Loading speech models {spec.drafter} (drafter) and {spec.verifier} (verifier)"
                      + (" and tuning them for this machine (the first time only)" if spec.calibrate else ""), None)
        from ..paths import demo_sample

        options = SpeculativeOptions(threshold=spec.draft_threshold, max_draft=spec.max_draft,
                                     sparse_tree=spec.sparse_tree)
        return SpeculativeEngine(drafter, verifier, options, device=spec.compute_device, dtype=spec.compute_dtype,
                                 calibrate_on=demo_sample() if spec.calibrate else None,
                                 encoder_seconds=spec.speculative_encoder_seconds)
    path = store.resolve(spec.model, on_status)
    if spec.compute_device.split(":")[0] == "cuda" and (problem := ct2_cuda_problem()) is not None:
        # the GPU chosen cannot run the speech models here (e.g. CUDA 12's cuBLAS missing since): captions go
        # on, on the CPU, rather than not at all; the setting stays, for when the GPU works again
        logger.warning("asr.compute_device %s unusable: %s", spec.compute_device, problem)
        if on_status:
            on_status(f"{problem} Captions run on the CPU this time.", None)
        spec = dataclasses.replace(spec, compute_device="cpu", compute_dtype="auto")
    if on_status:
        on_status(f"Loading speech model {spec.model}", None)
    engine = FasterWhisperEngine(path, device=spec.compute_device, compute_type=spec.compute_dtype,
                                 encoder_seconds=spec.encoder_seconds)
    if not spec.verify_lines:
        return engine
    from ..asr.verified import VerifiedEngine

    try:
        verifier_path = store.resolve(spec.verifier, on_status)
    except ModelError as exc:  # captions go on unverified rather than not at all
        logger.warning("verifier unavailable: %s", exc)
        if on_status:
            on_status(f"{exc} Captions go on with {spec.model} alone, unverified.", None)
        return engine
    if on_status:
        on_status(f"Loading speech model {spec.verifier} (it verifies each finished line)", None)
    verifier = FasterWhisperEngine(verifier_path, device=spec.compute_device, compute_type=spec.compute_dtype,
                                   encoder_seconds=spec.encoder_seconds)
    return VerifiedEngine(engine, verifier, cross_check=spec.cross_check)


def create_translator(
    settings: Settings, store: ModelStore, on_status: StatusCallback | None = None
) -> LlamaTranslator | None:
    """The translator selected in settings, or None when the target is ``none``."""
    spec = TranslatorSpec.from_settings(settings)
    if spec.target == "none":
        return None
    path = store.resolve(spec.model, on_status)
    if on_status:
        on_status(f"Loading translation model {spec.model}", None)
    style = spec.prompt_style
    from ..models.registry import get_spec

    catalogued = get_spec(spec.model)
    if style == "auto" and catalogued is not None and "prompt_style" in catalogued.extra:
        style = catalogued.extra["prompt_style"]
    knobs = TranslatorKnobs.from_settings(settings)
    options = TranslatorOptions(
        source_lang=spec.source_lang,
        target_lang=spec.target,
        prompt_style=style,
        chat_prompt=catalogued.extra.get("chat_prompt", "generic") if catalogued is not None else "generic",
        n_threads=spec.n_threads,
        n_gpu_layers=spec.n_gpu_layers,
        beta=knobs.beta,
        reuse_prefix=spec.reuse_prefix,
        lookup=spec.lookup,
        clause_pieces=spec.clause_pieces,
        draft_mask_k=knobs.draft_mask_k,
        **bias_rules(knobs.bias_scope),
    )
    return LlamaTranslator(path, options)

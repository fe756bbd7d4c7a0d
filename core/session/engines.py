"""Build the engines named in settings from the model store (one instance per model)."""

from __future__ import annotations

from ..asr.engine import ASREngine, FasterWhisperEngine
from ..models.store import ModelStore, StatusCallback
from ..settings import Settings
from ..translate.translator import LlamaTranslator, TranslatorOptions, bias_rules

# What each engine is built from: a change to any of these needs the engine rebuilt.
ASR_ENGINE_KEYS = ("engine", "model", "drafter", "verifier", "draft_threshold", "max_draft", "sparse_tree",
                   "calibrate", "compute_device", "compute_dtype", "encoder_seconds",
                   "speculative_encoder_seconds")
TRANSLATOR_KEYS = ("target", "model", "prompt_style", "clause_pieces", "n_threads", "n_gpu_layers", "reuse_prefix")


def asr_engine_key(settings: Settings) -> tuple:
    """The settings the speech engine is built from."""
    return tuple(getattr(settings.asr, name) for name in ASR_ENGINE_KEYS)


def translator_key(settings: Settings) -> tuple:
    """The settings the translator is built from (the spoken language is in its prompt)."""
    return (settings.asr.language, *(getattr(settings.translation, name) for name in TRANSLATOR_KEYS))


def translator_knobs(settings: Settings) -> tuple[float | None, int, str]:
    """The translator's live knobs: β (None for plain re-translation), the in-draft mask-k and
    where β applies."""
    tr, cap = settings.translation, settings.captions
    return (tr.beta if tr.engine == "ssbd" else None), (cap.mask_k if cap.mask_mode == "draft" else 0), tr.bias_scope


def create_asr_engine(settings: Settings, store: ModelStore, on_status: StatusCallback | None = None) -> ASREngine:
    """The speech recogniser selected in settings."""
    asr = settings.asr
    if asr.engine == "speculative":
        from ..asr.speculative.decoder import SpeculativeOptions
        from ..asr.speculative.engine import SpeculativeEngine

        drafter = store.resolve(asr.drafter, on_status)
        verifier = store.resolve(asr.verifier, on_status)
        if on_status:
            on_status(f"Loading speech models {asr.drafter} (drafter) and {asr.verifier} (verifier)"
                      + (" and tuning them for this machine (the first time only)" if asr.calibrate else ""), None)
        from ..paths import demo_sample

        options = SpeculativeOptions(threshold=asr.draft_threshold, max_draft=asr.max_draft,
                                     sparse_tree=asr.sparse_tree)
        return SpeculativeEngine(drafter, verifier, options, device=asr.compute_device, dtype=asr.compute_dtype,
                                 calibrate_on=demo_sample() if asr.calibrate else None,
                                 encoder_seconds=asr.speculative_encoder_seconds)
    path = store.resolve(settings.asr.model, on_status)
    if on_status:
        on_status(f"Loading speech model {settings.asr.model}", None)
    return FasterWhisperEngine(path, device=settings.asr.compute_device, compute_type=settings.asr.compute_dtype,
                               encoder_seconds=settings.asr.encoder_seconds)


def create_translator(
    settings: Settings, store: ModelStore, on_status: StatusCallback | None = None
) -> LlamaTranslator | None:
    """The translator selected in settings, or None when the target is ``none``."""
    tr = settings.translation
    if tr.target == "none":
        return None
    path = store.resolve(tr.model, on_status)
    if on_status:
        on_status(f"Loading translation model {tr.model}", None)
    style = tr.prompt_style
    from ..models.registry import get_spec

    spec = get_spec(tr.model)
    if style == "auto" and spec is not None and "prompt_style" in spec.extra:
        style = spec.extra["prompt_style"]
    beta, draft_mask_k, bias_scope = translator_knobs(settings)
    options = TranslatorOptions(
        source_lang=settings.asr.language,
        target_lang=tr.target,
        prompt_style=style,
        n_threads=tr.n_threads,
        n_gpu_layers=tr.n_gpu_layers,
        beta=beta,
        reuse_prefix=tr.reuse_prefix,
        clause_pieces=tr.clause_pieces,
        draft_mask_k=draft_mask_k,
        **bias_rules(bias_scope),
    )
    return LlamaTranslator(path, options)

"""Typed, versioned settings stored as TOML under the platformdirs config dir.

Each section is a dataclass; each field says in its metadata when a change applies
(:class:`Applies`: at once, also mid-session, or when captions next start; :data:`NEXT_START_KEYS`
is derived from it) and may carry validation metadata (``choices`` or ``min``/``max``). Invalid
values are refused with a :class:`~core.errors.SettingsError` that names the key, e.g.
``translation.beta must be between 0.0 and 1.0 (got 1.5)``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import tomli_w

from . import logger
from .errors import SettingsError
from .hotkeys import refusal as hotkey_refusal
from .paths import config_dir, write_atomic
from .text import TARGET_LANGUAGES, language_name

SETTINGS_VERSION = 9
# where SSBD's bias applies (core.translate.translator.bias_rules; measured by `sotto bench bias`)
BIAS_SCOPES = ("paper", "final-exact", "holdback-1", "holdback-1+final-exact")
# Version history: 1 — audio, asr, translation, captions; 2 — adds ``overlay`` (the desktop
# app's caption window) and ``audio.source``; 3 — adds ``overlay.speakers`` (whose captions a
# meeting shows); 4 — adds ``asr.clause_min_words`` and ``asr.max_line_words`` and retunes
# ``asr.min_chunk_s`` and ``asr.buffer_trim_s`` for latency (sotto bench live); 5 — adds
# ``translation.bias_scope`` and retunes ``translation.n_gpu_layers`` to -1 (every layer on a GPU
# where there is one; the CPU is unchanged); 6 — turns ``asr.verify_lines`` on (verified captions by
# default); 7 — retunes ``translation.beta`` from 0.2 to 0.5 (an unfinished line's translation keeps
# its previous words) and ``translation.partial_share`` from 0.3 to 0.2, and adds
# ``translation.lookup``; 8 — moves the ``hotkeys`` defaults from Ctrl+Shift+S/P/O/T (Save As, a private
# window, the bookmarks and reopen closed tab elsewhere) to Ctrl+Alt+Shift+Space/P/O/X; 9 — adds the
# ``speakers`` section (speaker labels: on/off, how many to expect) and ``overlay.speaker_style``. Keys added
# without a version bump (a new key with its default reads an old file unchanged): ``asr.encoder_seconds``,
# ``asr.speculative_encoder_seconds``, ``translation.partial_share``, the ``hotkeys`` section,
# ``asr.pause_commit``, ``asr.verify_lookahead_s``, ``asr.cross_check``, ``asr.verify_recheck_s``,
# ``asr.verify_whole_sentences``. Older files load
# unchanged and new keys get defaults, except that a retuned key still at its old default
# (a file saves every value) takes the new one: see :data:`_RETUNED`.



class Applies(StrEnum):
    """When a changed setting takes effect."""

    LIVE = "live"  # at once, also in a running session (the pipeline's and service's apply_settings, the overlay)
    NEXT_START = "next-start"  # read when captions start or the engines are built: the next Start


class ASREngineKind(StrEnum):
    """The speech engines (``asr.engine``)."""

    FASTER_WHISPER = "faster-whisper"
    SPECULATIVE = "speculative"


class TranslationEngineKind(StrEnum):
    """The translation engines (``translation.engine``): SSBD with β, or plain re-translation."""

    SSBD = "ssbd"
    AR = "ar"


LIVE, NEXT_START = Applies.LIVE, Applies.NEXT_START


def _setting(default: Any, applies: Applies, *, lo: float | None = None, hi: float | None = None,
             choices: tuple[str, ...] | type[StrEnum] | None = None, **meta: Any) -> Any:
    """A settings field: its default, when a change applies, and what it accepts (a range, choices
    or, with an enum, its members: the value is then stored as the enum, written as its string)."""
    meta["applies"] = applies
    if lo is not None:
        meta["min"], meta["max"] = lo, hi
    if isinstance(choices, type):
        meta["enum"] = choices
        choices = tuple(choices)
    if choices is not None:
        meta["choices"] = tuple(choices)
    return field(default=default, metadata=meta)


_COLOUR = {"pattern": re.compile(r"^#[0-9a-fA-F]{6}$"), "pattern_doc": "a colour like #ffcc00"}
_PLACE = r"[^|]+=-?\d+,-?\d+,\d+,\d+"
_PLACES = {"pattern": re.compile(rf"^$|^{_PLACE}( \| {_PLACE})*$"),
           "pattern_doc": "screen places like 'HDMI-1=100,700,900,170 | eDP-1=0,500,800,160'"}


@dataclass
class AudioSettings:
    """Where audio comes from (all read when captions start)."""

    device: str = _setting("", NEXT_START, doc="input device name or index; empty = system default")
    channel: str = _setting("mix", NEXT_START, choices=("mix", "left", "right"))
    source: str = _setting(
        "mic", NEXT_START,
        doc="what the app captions: 'mic', 'system' (what the computer plays), "
            "'system:OUTPUT', 'both' (mic as me, system as them), "
            "'demo' or an audio file path",
    )


@dataclass
class ASRSettings:
    """Streaming speech recognition (all read when captions start: the engine and the transcriber)."""

    engine: ASREngineKind = _setting(ASREngineKind.FASTER_WHISPER, NEXT_START, choices=ASREngineKind)
    model: str = _setting("whisper-tiny.en", NEXT_START)  # the faster-whisper engine's model
    drafter: str = _setting("whisper-tiny.en", NEXT_START)  # speculative engine: proposes tokens
    verifier: str = _setting("whisper-base", NEXT_START)  # speculative engine: its greedy output is the transcript
    # faster-whisper engine: each finished line decoded again by ``verifier`` (core.asr.verified): base's
    # accuracy in the committed lines, each committed a little later and for a little more CPU
    # (`sotto bench live`, `sotto bench verified`); the engine calibration (core.asr.calibration) turns
    # it off where it cannot keep up
    verify_lines: bool = _setting(True, NEXT_START)
    # ... once this much audio after the line has arrived (core.asr.verified.VerifyOptions.lookahead_s): longer,
    # the line's last words are no longer the decode's last and conversation is heard better, but the line is
    # confirmed and translated that much later (`sotto bench meeting`, `sotto bench live`)
    verify_lookahead_s: float = _setting(0.7, NEXT_START, lo=0.3, hi=5.0)
    # ... and a line the verifier heard otherwise than the drafter is decoded again once this much audio after it
    # has arrived (core.asr.verified.VerifyOptions.recheck_s; 0: never): where the two models agree the line is
    # still confirmed at verify_lookahead_s. Calls are heard better in fast mode (in real time within run-to-run
    # noise), but about half the lines of a call and a third of a reading wait, so a finished sentence's
    # translation comes late in the tail and the CPU rises (`sotto bench meeting`, `sotto bench live`): the
    # user's choice
    verify_recheck_s: float = _setting(0.0, NEXT_START, lo=0.0, hi=8.0)
    # ... and a line the drafter ended as a sentence where the verifier heard it go on (no . ? ! at its end) is
    # verified again with the next line (core.asr.verified.VerifyOptions.join_unfinished): committed lines, and
    # the translations made of them, are whole sentences rather than halves ("Yes, I'd like to" | "book a taxi."),
    # but those lines are confirmed and translated a line later (on the reading a finished sentence's
    # translation at p90 3.4 s against 1.5 s, `sotto bench live`; calls within noise, `sotto bench meeting`):
    # the user's choice
    verify_whole_sentences: bool = _setting(False, NEXT_START)
    # ... and by the streaming model too, the decode both models find likelier committed
    # (core.asr.verified.VerifiedEngine.cross_check): neither hears every line of a conversation best, but
    # on the calls the gain is within run-to-run noise, and it costs CPU and commits later
    # (`sotto bench meeting`, `sotto bench live`), so it is the user's choice
    cross_check: bool = _setting(False, NEXT_START)
    draft_threshold: float = _setting(0.4, NEXT_START, lo=0.0, hi=1.0)
    max_draft: int = _setting(24, NEXT_START, lo=1, hi=64)
    # also verify the drafter's runner-up at its first unsure token (same pass)
    sparse_tree: bool = _setting(False, NEXT_START)
    # tune threshold, longest draft and lazy drafter for this machine (measured once, stored)
    calibrate: bool = _setting(True, NEXT_START)
    language: str = _setting("en", NEXT_START)
    compute_device: str = _setting("cpu", NEXT_START, choices=("cpu", "cuda", "auto"))
    # auto: faster-whisper int8 on the CPU where it runs (core.compute.ct2_compute_type), float16 on CUDA;
    # the speculative engine float32 on the CPU, float16 on CUDA and MPS (core.compute.torch_dtype_name)
    compute_dtype: str = _setting("auto", NEXT_START, choices=("auto", "float32", "float16", "bfloat16", "int8"))
    # faster-whisper: the encoder reads the window plus 2 s of padding, at least this long, instead of
    # Whisper's 30 s (30: Whisper's own; core.asr.engine.ENCODER_SECONDS says why)
    encoder_seconds: float = _setting(10.0, NEXT_START, lo=10.0, hi=30.0)
    # the speculative engine's (both its models): Whisper's 30 s by default, since with base as the
    # verifier the 10 s floor cost accuracy (sotto bench encoder --engine speculative), unlike with
    # tiny.en alone
    speculative_encoder_seconds: float = _setting(30.0, NEXT_START, lo=10.0, hi=30.0)
    min_chunk_s: float = _setting(0.5, NEXT_START, lo=0.2, hi=10.0)  # in real time: more on a slow machine
    # the streaming window is trimmed at a line end beyond this; with verify_lines the drafter's at most
    # 5 s (core.asr.verified.VerifyOptions.drafter_trim_s: its words are drafts)
    buffer_trim_s: float = _setting(8.0, NEXT_START, lo=5.0, hi=28.0)
    vad: bool = _setting(True, NEXT_START)
    vad_threshold: float = _setting(0.5, NEXT_START, lo=0.05, hi=0.95)
    vad_min_silence_s: float = _setting(0.5, NEXT_START, lo=0.1, hi=5.0)
    # the voice activity detector hears the audio without rumble and a quiet voice raised
    # (core.audio.vad.VadInput); off: as it came, and a quiet or far voice may go unheard
    vad_level: bool = _setting(True, NEXT_START)
    utterance_end_s: float = _setting(2.0, NEXT_START, lo=0.5, hi=10.0)
    # a line also ends at a clause mark or a short pause once it holds this many words (0: sentence ends only)
    clause_min_words: int = _setting(6, NEXT_START, lo=0, hi=60)
    max_line_words: int = _setting(20, NEXT_START, lo=0, hi=200)  # a line ends after this many words (0: never)
    # at a pause, the decode in it commits the words before it without a second decode agreeing
    # (core.asr.streaming.StreamingOptions.pause_commit; off, as measured there)
    pause_commit: bool = _setting(False, NEXT_START)


@dataclass
class TranslationSettings:
    """Live translation of the recognised text (the model and its prompt at the next start; how it
    decodes at once)."""

    target: str = _setting("de", NEXT_START, choices=TARGET_LANGUAGES)
    model: str = _setting("gemma-3-270m", NEXT_START)
    engine: TranslationEngineKind = _setting(TranslationEngineKind.SSBD, LIVE, choices=TranslationEngineKind)
    # 0.5 and above: the previous translation of the unfinished line is kept whole (the bias outweighs any
    # disagreement) and only extended; finished sentences stay exactly greedy (bias_scope final-exact)
    beta: float = _setting(0.5, LIVE, lo=0.0, hi=1.0)
    # where β applies: final-exact = the unfinished line only (a finished sentence is exactly greedy)
    bias_scope: str = _setting("final-exact", LIVE, choices=BIAS_SCOPES)
    reuse_prefix: bool = _setting(True, NEXT_START)
    # guess the next tokens from the source and the previous translation (core.translate.lookup): the same
    # output in fewer model calls, but each call of several tokens costs more than one-token decoding on
    # one thread; slower on two cores, so off by default
    lookup: bool = _setting(False, NEXT_START)
    prompt_style: str = _setting("auto", NEXT_START, choices=("auto", "few-shot", "chat"))
    # few-shot prompts: a long sentence clause by clause (small models copy long ones)
    clause_pieces: bool = _setting(True, NEXT_START)
    n_gpu_layers: int = _setting(-1, NEXT_START, lo=-1, hi=999)  # all (a CPU-only build ignores it)
    # 0: one-token decoding on half the cores, or on all where a step timed at load is 1.5x as fast there
    # (core.translate.llama_runner.faster_threads); calls of several tokens on all
    n_threads: int = _setting(0, NEXT_START, lo=0, hi=256)
    # the most of the translator's time that unfinished lines may take (1: whenever it is free); finished
    # sentences are always translated at once (core.translate.worker). With translations as fast as β = 0.5
    # makes them, 0.2 updates the unfinished line as often as 0.3 did before, on less CPU
    partial_share: float = _setting(0.2, LIVE, lo=0.1, hi=1.0)


@dataclass
class CaptionSettings:
    """What is shown and how steadily (all at once)."""

    mask_k: int = _setting(3, LIVE, lo=0, hi=10)
    mask_mode: str = _setting("display", LIVE, choices=("display", "draft"))
    show_at_pause: bool = _setting(True, LIVE)  # when the speaker pauses, the partial line is shown whole (no mask-k)
    # the source's unconfirmed words: "heard" = each shown once source_hold_s of speech follows it
    # (core.captions.policy), "words" = the last mask_k hidden, as for the translation
    source_mask: str = _setting("heard", LIVE, choices=("heard", "words"))
    source_hold_s: float = _setting(0.3, LIVE, lo=0.0, hi=5.0)


@dataclass
class OverlaySettings:
    """The floating caption window of the desktop app (all at once: its controller applies them)."""

    show: str = _setting("both", LIVE, choices=("both", "source", "translation"))
    speakers: str = _setting("both", LIVE, choices=("both", "them", "me"))  # meetings: whose captions
    lines: int = _setting(2, LIVE, lo=1, hi=8)  # visual lines per shown language
    font_family: str = _setting("", LIVE)  # empty: the system's sans-serif
    font_size: int = _setting(22, LIVE, lo=8, hi=96)
    translation_font_size: int = _setting(0, LIVE, lo=0, hi=96)  # 0: the speech's size
    outline: str = _setting("none", LIVE, choices=("none", "outline", "shadow"))  # readable over bright video
    reading_mode: bool = _setting(False, LIVE)  # only finished words: speech committed, translations frozen
    text_color: str = _setting("#ffffff", LIVE, **_COLOUR)
    tentative_color: str = _setting("#9fb4c8", LIVE, **_COLOUR)
    translation_color: str = _setting("#ffe9a8", LIVE, **_COLOUR)
    background_color: str = _setting("#101418", LIVE, **_COLOUR)
    opacity: float = _setting(0.75, LIVE, lo=0.0, hi=1.0)  # of the background
    click_through: bool = _setting(False, LIVE)
    visible: bool = _setting(True, LIVE)
    x: int = _setting(-1, LIVE, lo=-100000, hi=100000)  # -1: centred at the bottom
    y: int = _setting(-1, LIVE, lo=-100000, hi=100000)
    width: int = _setting(900, LIVE, lo=200, hi=10000)
    height: int = _setting(170, LIVE, lo=60, hi=4000)
    screen: str = _setting("", LIVE)  # the screen the overlay was last on (by name)
    # where it was on each screen it has been on: "NAME=x,y,width,height" (x, y from the screen's top-left
    # corner) joined by " | " (overlay_places)
    places: str = _setting("", LIVE, **_PLACES)
    # where lines carry speaker labels (speakers.labels): the label before each line, a colour per speaker,
    # or neither
    speaker_style: str = _setting("label", LIVE, choices=("label", "colour", "none"))


@dataclass
class SpeakerSettings:
    """Who said what (core.speakers): each committed line of the other side of a meeting labelled "Them 1",
    "Them 2", … from its voice (read when captions start)."""

    labels: bool = _setting(False, NEXT_START)  # meetings: label the other side's speakers
    expected: int = _setting(0, NEXT_START, lo=0, hi=20)  # how many speakers to expect there (0: unknown)


# A key combination in Qt's portable key-sequence text (QKeySequence.PortableText): modifiers, then one
# key. Plain keys are refused (a global binding would take that key from every program); F-keys alone
# are allowed. Core parses no Qt: this is the subset of Qt's syntax a global hotkey can be. A combination
# a well-known program uses is refused when chosen ("refuse": core.hotkeys), and kept from a saved file.
_HOTKEY_KEY = (r"(F([1-9]|[12][0-9]|3[0-5])|Space|Esc|Tab|Backspace|Return|Enter|Ins|Del|Pause|Print|Home|End"
               r"|Left|Up|Right|Down|PgUp|PgDown|Menu|[A-Z0-9]|[!-/:-@\[-`{-~])")
_HOTKEY = {"pattern": re.compile(rf"^(|((Ctrl|Shift|Alt|Meta)\+)+{_HOTKEY_KEY}|F([1-9]|[12][0-9]|3[0-5]))$",
                                 re.IGNORECASE),
           "pattern_doc": "a key combination such as Ctrl+Alt+Shift+P (modifiers and one key, or an F-key alone), "
                          "or empty for none",
           "refuse": hotkey_refusal}


@dataclass
class HotkeySettings:
    """Global hotkeys of the desktop app, in Qt's portable key-sequence text ("" = off; all at once: the
    hotkeys controller binds them again). Ctrl+Alt+Shift with a key: no common program or desktop uses
    these (core.hotkeys lists what they do use); Space starts and stops, as in media players."""

    start: str = _setting("Ctrl+Alt+Shift+Space", LIVE, **_HOTKEY)  # start or stop captions
    pause: str = _setting("Ctrl+Alt+Shift+P", LIVE, **_HOTKEY)  # pause or resume
    overlay: str = _setting("Ctrl+Alt+Shift+O", LIVE, **_HOTKEY)  # show or hide the captions
    click_through: str = _setting("Ctrl+Alt+Shift+X", LIVE, **_HOTKEY)  # click-through on or off


@dataclass
class Settings:
    """All user settings. ``version`` is bumped when the layout changes."""

    version: int = SETTINGS_VERSION
    audio: AudioSettings = field(default_factory=AudioSettings)
    asr: ASRSettings = field(default_factory=ASRSettings)
    translation: TranslationSettings = field(default_factory=TranslationSettings)
    captions: CaptionSettings = field(default_factory=CaptionSettings)
    overlay: OverlaySettings = field(default_factory=OverlaySettings)
    hotkeys: HotkeySettings = field(default_factory=HotkeySettings)
    speakers: SpeakerSettings = field(default_factory=SpeakerSettings)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for TOML."""
        return dataclasses.asdict(self)

    def validate(self) -> None:
        """Raise :class:`SettingsError` naming the first invalid key."""
        for section in _SECTIONS:
            obj = getattr(self, section)
            for f in dataclasses.fields(obj):
                _check(f"{section}.{f.name}", f, getattr(obj, f.name))

    def with_value(self, key: str, value: Any, *, saved: bool = False) -> Settings:
        """A copy with ``key`` (``section.name``) set, validated; the original is untouched. ``saved``: the
        value comes from the settings file, so a hotkey a well-known program uses is kept (the user chose
        it before it was refused) and logged rather than refused."""
        section, _, name = key.partition(".")
        if section not in _SECTIONS or not name:
            raise SettingsError(f"Unknown setting '{key}'.")
        obj = getattr(self, section)
        fields = {f.name: f for f in dataclasses.fields(obj)}
        if name not in fields:
            raise SettingsError(f"Unknown setting '{key}'.")
        coerced = _coerce(key, fields[name], value)
        _check(key, fields[name], coerced)
        refused = fields[name].metadata.get("refuse", lambda _: "")(coerced)
        if refused and not saved:
            raise SettingsError(refused)
        if refused:
            _log_kept(key, coerced, refused)
        new = dataclasses.replace(self, **{section: dataclasses.replace(obj, **{name: coerced})})
        return new

    def value(self, key: str) -> Any:
        """The value of ``key`` (``section.name``)."""
        _field(key)  # an unknown key is refused by name
        section, _, name = key.partition(".")
        return getattr(getattr(self, section), name)


_SECTIONS = ("audio", "asr", "translation", "captions", "overlay", "hotkeys", "speakers")


@functools.cache  # once per process: every save reads the file again (_keep_unreadable)
def _log_kept(key: str, value: str, refused: str) -> None:
    logger.warning("keeping %s = %r as saved, although: %s", key, value, refused)

Place = tuple[int, int, int, int]  # x, y, width, height


def overlay_places(text: str) -> dict[str, Place]:
    """``overlay.places`` as {screen name: (x, y, width, height)}."""
    places: dict[str, Place] = {}
    for entry in filter(None, (e.strip() for e in text.split(" | "))):
        name, _, numbers = entry.rpartition("=")
        x, y, w, h = (int(v) for v in numbers.split(","))
        places[name] = (x, y, w, h)
    return places


def with_place(text: str, screen: str, place: Place, keep: int = 8) -> str:
    """``overlay.places`` with ``screen`` at ``place`` (most recent last; at most ``keep`` screens)."""
    places = overlay_places(text)
    places.pop(screen, None)
    places[screen] = place
    kept = list(places.items())[-keep:]
    return " | ".join(f"{name}={x},{y},{w},{h}" for name, (x, y, w, h) in kept if "|" not in name)


def _field(key: str) -> dataclasses.Field:
    section, _, name = key.partition(".")
    cls = {f.name: f.default_factory for f in dataclasses.fields(Settings)}.get(section)  # type: ignore[misc]
    fields = {f.name: f for f in dataclasses.fields(cls)} if cls is not None else {}
    if name not in fields:
        raise SettingsError(f"Unknown setting '{key}'.")
    return fields[name]


def value_range(key: str) -> tuple[float, float]:
    """The smallest and largest value ``key`` accepts (for sliders and spin boxes)."""
    meta = _field(key).metadata
    if "min" not in meta:
        raise SettingsError(f"{key} has no range.")
    return meta["min"], meta["max"]


def value_choices(key: str) -> tuple[str, ...]:
    """The values ``key`` accepts, where it is a choice."""
    meta = _field(key).metadata
    if "choices" not in meta:
        raise SettingsError(f"{key} is not a choice.")
    return tuple(meta["choices"])


def applies(key: str) -> Applies:
    """When a change to ``key`` takes effect (its field's metadata)."""
    return _field(key).metadata["applies"]


def _keys(when: Applies) -> tuple[str, ...]:
    defaults = Settings()
    return tuple(f"{section}.{f.name}" for section in _SECTIONS for f in dataclasses.fields(getattr(defaults, section))
                 if f.metadata["applies"] is when)


# Derived from the fields' metadata, the one place that says when each setting applies.
NEXT_START_KEYS: tuple[str, ...] = _keys(NEXT_START)
LIVE_KEYS: tuple[str, ...] = _keys(LIVE)


def _coerce(key: str, f: dataclasses.Field, value: Any) -> Any:
    enum = f.metadata.get("enum")
    if enum is not None:  # stored as the enum member; an unknown value is refused by _check, naming the choices
        if not isinstance(value, str):
            raise SettingsError(f"{key} must be text (got {value!r}).")
        return enum(value) if value in f.metadata["choices"] else value
    kind = f.type if isinstance(f.type, type) else {"str": str, "int": int, "float": float, "bool": bool}[f.type]
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no", "on", "off"):
            return value.lower() in ("true", "1", "yes", "on")
        raise SettingsError(f"{key} must be true or false (got {value!r}).")
    if kind is int:
        if isinstance(value, bool):
            raise SettingsError(f"{key} must be a whole number (got {value!r}).")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise SettingsError(f"{key} must be a whole number (got {value!r}).")
    if kind is float:
        if isinstance(value, bool):
            raise SettingsError(f"{key} must be a number (got {value!r}).")
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise SettingsError(f"{key} must be a number (got {value!r}).") from None
    if not isinstance(value, str):
        raise SettingsError(f"{key} must be text (got {value!r}).")
    return value


def _check(key: str, f: dataclasses.Field, value: Any) -> None:
    meta = f.metadata
    if "choices" in meta and value not in meta["choices"]:
        raise SettingsError(f"{key} must be one of {', '.join(map(str, meta['choices']))} (got {value!r}).")
    if "min" in meta and not (meta["min"] <= value <= meta["max"]):
        raise SettingsError(f"{key} must be between {meta['min']} and {meta['max']} (got {value!r}).")
    if "pattern" in meta and not meta["pattern"].match(value):
        raise SettingsError(f"{key} must be {meta['pattern_doc']} (got {value!r}).")


def english_only(model: str) -> bool:
    """Whether speech model ``model`` (a catalogue name or a folder) understands English only: Whisper's
    ``.en`` models, by the name they are published under."""
    return model.rstrip("/\\").lower().endswith(".en")


def check_combination(settings: Settings) -> None:
    """Refuse settings that are valid one by one but not together (raises :class:`SettingsError`).

    Every speech model a session runs must understand the spoken language: the streaming model, and
    with verified lines the verifier too (an English-only drafter's lines would show as English
    until verified, and an English-only verifier would commit English). The speculative engine's
    transcript is its verifier's alone."""
    asr = settings.asr
    language = asr.language
    if language not in ("en", ""):
        name = language_name(language)
        if asr.engine == ASREngineKind.SPECULATIVE:
            if english_only(asr.verifier):
                raise SettingsError(
                    f"The speech model {asr.verifier} understands English only; choose a multilingual model "
                    f"(e.g. whisper-base) before setting the spoken language to {name}.")
        elif english_only(asr.model) and asr.verify_lines and not english_only(asr.verifier):
            raise SettingsError(
                f"The streaming model {asr.model} understands English only: with {asr.verifier} verifying, "
                f"{name} would still show as English until each line is verified; choose a multilingual "
                f"streaming model (e.g. whisper-base) first.")
        elif english_only(asr.model):
            raise SettingsError(
                f"The speech model {asr.model} understands English only; choose a multilingual model "
                f"(e.g. whisper-base) before setting the spoken language to {name}.")
        elif asr.verify_lines and english_only(asr.verifier):
            raise SettingsError(
                f"The line verifier {asr.verifier} understands English only and would write {name} as "
                f"English; choose a multilingual verifier (e.g. whisper-base) or turn verified lines off.")
    if settings.translation.target != "none" and settings.translation.target == settings.asr.language:
        raise SettingsError("The translation language is the spoken language; choose another one, or 'none'.")


# Defaults changed by a version: {version: {key: the default before it}}.
_RETUNED: dict[int, dict[str, Any]] = {4: {"asr.min_chunk_s": 1.0, "asr.buffer_trim_s": 15.0},
                                       5: {"translation.n_gpu_layers": 0},
                                       6: {"asr.verify_lines": False},
                                       7: {"translation.beta": 0.2, "translation.partial_share": 0.3},
                                       8: {"hotkeys.start": "Ctrl+Shift+S", "hotkeys.pause": "Ctrl+Shift+P",
                                           "hotkeys.overlay": "Ctrl+Shift+O", "hotkeys.click_through": "Ctrl+Shift+T"}}


def settings_path() -> Path:
    """The settings file's location."""
    return config_dir() / "settings.toml"


def load_settings(path: Path | None = None) -> Settings:
    """Read settings; a missing file gives defaults, an invalid one a :class:`SettingsError`.

    Unknown sections and keys (e.g. left by an older Sotto) are logged and ignored. A file from a
    newer Sotto (a higher ``version``) is refused with a sentence rather than half-understood;
    the app then runs on defaults (see :func:`save_settings`, which keeps a copy of such a file).
    """
    path = path or settings_path()
    if not path.exists():
        return Settings()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"The settings file {path} is not valid TOML ({exc}); fix or delete it.") from exc
    except OSError as exc:  # a folder in its place, no permission, an I/O error
        raise SettingsError(f"Could not read the settings file {path} ({exc.strerror or exc}).") from exc
    version = raw.get("version", SETTINGS_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise SettingsError(f"The settings file {path} has version = {version!r}; it must be a whole number.")
    if version > SETTINGS_VERSION:
        raise SettingsError(
            f"The settings file {path} was written by a newer Sotto (version {version}); "
            f"this one understands version {SETTINGS_VERSION}."
        )
    settings = Settings()
    retuned = {key: old for v, keys in _RETUNED.items() if version < v for key, old in keys.items()}
    for section, values in raw.items():
        if section == "version":
            continue
        if section in _SECTIONS and not isinstance(values, dict):
            raise SettingsError(f"In the settings file {path}, '{section}' must be a section ([{section}]), "
                                f"not {section} = {values!r}.")
        if section not in _SECTIONS:
            logger.warning("ignoring unknown settings section %r in %s", section, path)
            continue
        for name, value in values.items():
            if f"{section}.{name}" in retuned and value == retuned[f"{section}.{name}"]:
                continue  # an old default, saved with the file: the new default applies
            try:
                settings = settings.with_value(f"{section}.{name}", value, saved=True)
            except SettingsError as exc:
                if str(exc).startswith("Unknown setting"):
                    logger.warning("ignoring unknown setting %s.%s in %s", section, name, path)
                    continue
                raise SettingsError(f"{exc} (in {path})") from None
    return settings


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Validate and write settings atomically (a crash, even ``kill -9``, leaves the old file or
    the new one, never a torn one); returns the path written.

    A file this Sotto cannot read (broken, or from a newer version) is not lost: it is kept
    as ``settings.toml.bak`` before being replaced.
    """
    settings.validate()
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = settings.to_dict()
    data["version"] = SETTINGS_VERSION
    try:
        text = tomli_w.dumps(data)
        payload = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a surrogate-escaped file name in audio.source, say
        raise SettingsError(
            f"A setting holds text that cannot be saved ({exc.object[exc.start:exc.end]!r} is not valid UTF-8); "
            "rename the file it names."
        ) from None
    _keep_unreadable(path)
    write_atomic(path, payload)
    return path


def _keep_unreadable(path: Path) -> None:
    """Copy a settings file that does not load (broken, or from a newer Sotto) to ``NAME.bak``
    before it is replaced, so the user's own file is never silently lost."""
    try:
        load_settings(path)
    except SettingsError as exc:
        backup = path.with_name(path.name + ".bak")
        try:
            write_atomic(backup, path.read_bytes())
            logger.warning("settings file %s could not be loaded (%s); kept a copy as %s", path, exc, backup)
        except OSError as err:
            logger.warning("could not keep a copy of the unreadable settings file %s (%s)", path, err)

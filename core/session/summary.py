"""What a caption run cost and how it went: latency statistics and the typed run summary.

:class:`RunStats` collects while a run goes (stage times, lag, speech→screen
latencies); :class:`RunSummary` is the result, built by :func:`run_summary` from what
the run's stages counted and written to ``summary.json`` with :meth:`RunSummary.to_dict`
(like faster-whisper's ``TranscriptionInfo``). :func:`journal_header` is what a session's
files say about it before it has a summary.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import __version__
from ..asr.verified import LineVerifier
from ..settings import ASREngineKind, Settings
from ..stream import StageTimings, TranscriptUpdate, TranslationUpdate

if TYPE_CHECKING:
    from ..asr.streaming import StreamingTranscriber
    from ..captions.policy import CaptionPolicy
    from ..translate.streaming import StreamingTranslator

# Overload: a real-time run whose lag (wall clock minus audio clock at a read) reaches BEHIND_S
# tells the user once per episode; it has caught up when the lag is back under CAUGHT_UP_S (lower,
# so a lag hovering around the threshold does not flood the user with messages). Each read takes
# all audio since the last one, so one slow decode makes a lag that the next read catches up on.
BEHIND_S = 3.0
CAUGHT_UP_S = 2.0
CAUGHT_UP_MESSAGE = "Sotto has caught up; captions are live again."


def falling_behind_message(lag: float) -> str:
    """The warning when captions are ``lag`` seconds behind the speech."""
    return (f"Sotto is falling behind ({lag:.0f} s); captions will catch up: the newest speech comes first, "
            "and a smaller model or fewer busy programs helps.")


@dataclass
class LatencyStats:
    """Mean, median, 90th percentile and maximum of a list of latencies (seconds)."""

    mean: float
    p50: float
    p90: float
    max: float
    count: int

    @classmethod
    def of(cls, values: list[float]) -> LatencyStats | None:
        """The statistics of ``values`` (None when there are none)."""
        if not values:
            return None
        ordered = sorted(values)
        return cls(
            mean=round(sum(ordered) / len(ordered), 3),
            p50=round(ordered[len(ordered) // 2], 3),
            p90=round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))], 3),
            max=round(ordered[-1], 3),
            count=len(ordered),
        )


@dataclass
class Latencies:
    """Real-time runs: how far the screen was behind the speech."""

    lag: LatencyStats | None  # wall clock minus audio clock, at every read
    sentence_on_screen: LatencyStats | None  # end of a sentence's speech → committed on screen
    translation_on_screen: LatencyStats | None  # end of a sentence's speech → its final translation on screen


@dataclass
class ASRInfo:
    """The speech engine of a run and what it did."""

    engine: str
    model: str
    decodes: int
    max_window_seconds: float
    # where lines are verified: lines committed with the verifier's words, and lines kept as the
    # drafter heard them (Stop before their verification, a verifier failure or loop); None otherwise
    verified_lines: int | None = None
    unverified_lines: int | None = None
    # ... and how lines were verified (core.asr.verified.LineVerifier's counts; None where nothing verifies):
    # decodes that looped or held no words and waited for the next line, lines taken from the decode
    # before, lines decoded again later, drafter lines with nothing new committed
    merged_lines: int | None = None
    carried_lines: int | None = None
    rechecked_lines: int | None = None
    dropped_lines: int | None = None


@dataclass
class TranslationInfo:
    """The translation engine of a run and what it did."""

    engine: str
    model: str
    target: str
    calls: int
    draft_tokens: int
    accepted_tokens: int
    output_tokens: int
    dropped_partials: int
    preempted_partials: int = 0  # partial translations given up for a finished sentence (real time)
    # seconds from a finished sentence's arrival to the start of its translation (real time): p50, p90
    sentence_wait_p50: float | None = None
    sentence_wait_p90: float | None = None


@dataclass
class RunSummary:
    """The result of one caption run (``summary.json``)."""

    sotto_version: str
    source: str
    mode: str  # realtime | fast
    audio_seconds: float
    wall_seconds: float
    real_time_factor: float | None
    cpu_seconds: float
    cpu_seconds_per_audio_second: float | None
    stage_seconds: dict[str, float]
    sentences: int
    no_speech: bool
    asr: ASRInfo
    translation: TranslationInfo | None
    normalized_erasure: dict[str, float]
    mask_k: int
    mask_mode: str
    overflows: int
    errors: list[str]
    completed: bool
    machine: dict[str, Any] = field(default_factory=lambda: {
        "cpu_count": os.cpu_count(), "platform": platform.platform(), "processor": platform.machine()})
    latency_seconds: Latencies | None = None  # real time only
    fell_behind: int = 0  # times the lag reached BEHIND_S (real time only; each told once)

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready data (``latency_seconds`` only for real-time runs)."""
        out = asdict(self)
        if self.latency_seconds is None:
            del out["latency_seconds"]
        return out


class RunStats:
    """Collects a run's stage times and latencies as updates reach the screen."""

    def __init__(self, realtime: bool) -> None:
        self.realtime = realtime
        self.timings = StageTimings()
        self._lag: list[float] = []
        self._sentence: list[float] = []
        self._translation: list[float] = []
        self.behind = False  # the lag reached BEHIND_S and has not yet come back under CAUGHT_UP_S
        self.fell_behind = 0

    def on_behind(self, lag: float) -> None:
        """The lag reached :data:`BEHIND_S` (an episode of overload starts)."""
        self.behind = True
        self.fell_behind += 1

    def on_caught_up(self) -> None:
        """The lag is back under :data:`CAUGHT_UP_S`."""
        self.behind = False

    def on_read(self, wall: float, audio_time: float) -> float | None:
        """After each read: the lag (real time only)."""
        if not self.realtime:
            return None
        lag = wall - audio_time
        self._lag.append(lag)
        return lag

    def on_transcript(self, wall: float, update: TranscriptUpdate) -> None:
        """A transcript update reached the screen at ``wall``."""
        self.timings.add(update.timings)
        if self.realtime:
            self._sentence += [wall - s.end for s in update.sentences]

    def on_translation(self, wall: float, update: TranslationUpdate) -> None:
        """A translation update reached the screen at ``wall``."""
        self.timings.translate += update.seconds
        if self.realtime:
            self._translation += [wall - f.sentence.end for f in update.frozen]

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per stage, rounded for the summary."""
        return {k: round(v, 3) for k, v in asdict(self.timings).items()}

    def latencies(self) -> Latencies | None:
        """The latency statistics (None unless real time)."""
        if not self.realtime:
            return None
        return Latencies(LatencyStats.of(self._lag), LatencyStats.of(self._sentence),
                         LatencyStats.of(self._translation))


def journal_header(settings: Settings, source: str, translating: bool) -> dict[str, Any]:
    """What a session's journal says about it first: the source, the languages and the models."""
    return {
        "source": source,
        "language": settings.asr.language,
        "target": settings.translation.target if translating else None,
        "asr_model": settings.asr.model,
        "translation_model": settings.translation.model if translating else None,
    }


def translation_info(engine: str, settings: Settings, translator: StreamingTranslator,
                     dropped_partials: int, preempted_partials: int = 0,
                     sentence_waits: list[float] | None = None) -> TranslationInfo:
    """What the translation engine named ``engine`` did in a run, as ``translator`` counted it (and
    the worker: partials dropped or given up, finished sentences' waits)."""
    waits = sentence_waits or []
    return TranslationInfo(
        engine=engine, model=settings.translation.model, target=settings.translation.target,
        calls=translator.calls, draft_tokens=translator.draft_tokens, accepted_tokens=translator.accepted_tokens,
        output_tokens=translator.output_tokens, dropped_partials=dropped_partials,
        preempted_partials=preempted_partials,
        sentence_wait_p50=round(float(np.percentile(waits, 50)), 3) if waits else None,
        sentence_wait_p90=round(float(np.percentile(waits, 90)), 3) if waits else None)


def run_summary(
    settings: Settings,
    *,
    realtime: bool,
    source: str,
    asr_engine: str,
    transcribers: Sequence[StreamingTranscriber],
    translation: TranslationInfo | None,
    stats: RunStats,
    policy: CaptionPolicy,
    cpu: float,
    wall: float,
    overflows: int,
    errors: list[str],
    completed: bool,
) -> RunSummary:
    """The summary of a run of ``source`` that took ``wall`` seconds and ``cpu`` CPU seconds: what its
    transcribers (one per stream), translator, statistics and caption policy counted."""
    audio = max((t.audio_time for t in transcribers), default=0.0)
    asr = settings.asr
    marks = [line.sentence.verified for line in policy.lines if line.sentence.verified is not None]
    verifiers = [t for t in transcribers if isinstance(t, LineVerifier)]

    def counted(count) -> int | None:
        return sum(count(v) for v in verifiers) if verifiers else None

    return RunSummary(
        sotto_version=__version__,
        source=source,
        mode="realtime" if realtime else "fast",
        audio_seconds=round(audio, 3),
        wall_seconds=round(wall, 3),
        real_time_factor=round(wall / audio, 4) if audio else None,
        cpu_seconds=round(cpu, 3),
        cpu_seconds_per_audio_second=round(cpu / audio, 4) if audio else None,
        stage_seconds=stats.stage_seconds(),
        sentences=len(policy.lines),
        no_speech=not policy.lines,
        asr=ASRInfo(
            engine=asr_engine,
            model=asr.model if asr.engine == ASREngineKind.FASTER_WHISPER else f"{asr.drafter}->{asr.verifier}",
            decodes=sum(t.decodes for t in transcribers),
            max_window_seconds=round(max((t.max_window_seconds for t in transcribers), default=0.0), 3),
            verified_lines=marks.count(True) if marks else None,
            unverified_lines=marks.count(False) if marks else None,
            merged_lines=counted(lambda v: v.merges), carried_lines=counted(lambda v: v.carried),
            rechecked_lines=counted(lambda v: v.rechecks), dropped_lines=counted(lambda v: len(v.dropped))),
        translation=translation,
        normalized_erasure=policy.metrics(),
        mask_k=settings.captions.mask_k,
        mask_mode=settings.captions.mask_mode,
        overflows=overflows,
        errors=errors,
        completed=completed,
        latency_seconds=stats.latencies(),
        fell_behind=stats.fell_behind,
    )

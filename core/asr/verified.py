"""Verified lines: the drafter streams, a larger verifier confirms each finished line.

The streaming transcriber (:class:`~core.asr.streaming.StreamingTranscriber`, with a small fast
model: the *drafter*) shows words as they are spoken and finishes lines. :class:`LineVerifier`
wraps it (as voice activity wraps the processor) and holds each finished line until ``lookahead_s``
of audio after its end has arrived (and, where ``min_window_s`` is set, its decode would read that
much); then the *verifier* (a larger Whisper) decodes once, greedily, the audio from up to
``context_s`` before the line (never back over a pause, and after the last verified line's cut) to
what has arrived, with the verified text before it as its prompt. The verifier's words that follow
the already verified ones, up to the one that matches the drafter's last word of the line (a
phrase said again, squashed into the decode's end or right before the phrase as said, left out:
:func:`squashed_echo`, :func:`squashed_copy`), are the line that is committed, journalled,
exported and translated. Until then the drafter's line is on
screen as a line of its own (``TranscriptUpdate.held``), and a changed line is replaced once, in
place, when it is verified: the partial line under it does not move.

Why this shape: a line decoded alone lacks context (worse than the drafter streaming), and a line
verified the moment the drafter finishes it ends mid-word, so the verifier invents an ending; the
line before as context, a little audio after the line and the cut at the drafter's last word fix
both. The context takes whole verified lines until ``context_s`` (so in practice the line before),
never reaches back over a pause of ``pause_s`` (after one, a line is decoded from ``preroll_s``
before it), and after a shorter pause takes at least the line before (a silence alone is no
context). The drafter's window is trimmed sooner (``drafter_trim_s``): its words are drafts, and
shorter windows cost less. A step that verifies a line held since an earlier step does not also
decode the drafter's window (``process``): the verifier has just read the newest audio, and the
drafter decodes at the next step with the new audio of both. The figures behind these choices are
`sotto bench verified`'s and `sotto bench live`'s (docs/BENCHMARKS.md).

What is promised: every line committed as verified (``Sentence.verified``) is a contiguous run of
the verifier's own greedy words for the audio it decoded and the prompt it was given, less a phrase
it said twice at once (a loop, or a squashed copy: :func:`kept_words`; :class:`VerifiedLine` keeps
the audio and prompt, so a test decodes them again). Where lines are cross-checked
(:class:`VerifiedEngine` ``cross_check``), the window's decode is the greedy output of whichever of the
two models wins it (``VerifiedLine.model``), and the promise holds for that model. Where the verifier's decode holds
no words at all, or falls into a loop (dashes, dots, a phrase over and over; or runs past the
tokens its audio can hold, ``Hypothesis.runaway``) before the line's last word, the line stays
held and is verified again together with the drafter's next line (once: a
decode over both lines, with more audio, seldom loops where one did; ``merges``), or alone where no
line has followed within ``retry_after_s``; where that decode fails the same way, or the stream ends
first, the drafter's line is committed instead, marked unverified and counted as a fallback. A loop
after the line's words leaves them verified. A line the drafter ended as a sentence where the verifier's
words go on (no . ? ! at its end: tiny.en puts a full stop or "..." at a speaker's pause) is held the
same way and verified together with the next line where ``join_unfinished`` is set, so that a committed
line, and its translation, is a whole sentence where the verifier hears one. Where the decode holds
words but none new in the line (the words were verified with the line before, or the verifier heard
none where the drafter heard the line), the line is what the decode before it heard past its own
line, up to the drafter's last word, where it heard that (``carried``: the two decodes disagreed on
where one line ends); else nothing is committed for the line (:attr:`LineVerifier.dropped`): that is
the verifier's greedy output, and committing the drafter's line there commits junk or a line twice.

Nothing the drafter finished is lost: a line leaves the held ones only when it is committed or
dropped. A quick Stop (:meth:`LineVerifier.abort`) never waits for the verifier: the lines still
held, the one being verified among them, are committed as the drafter heard them and marked
unverified (``verified=False``), as is a line whose verification fails (the first failure is told
in one sentence). A pause (``finish`` without a drafter decode) verifies the held lines.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import logger
from ..audio.convert import SAMPLE_RATE
from ..audio.window import AudioWindow
from ..errors import Interrupted
from ..stream import Sentence, TranscriptUpdate, Word
from ..text import ends_sentence
from .streaming import (
    StreamingOptions,
    StreamingTranscriber,
    collapse_start,
    degenerate,
    looping,
    prompt_from,
    push_pieces,
)

_SPOKEN = re.compile(r"\w")
_KEY = re.compile(r"[^\w']+")
SAME_WORD_S = 0.15  # a one-word line the next decode opens with was verified at or after its start, less this


@dataclass
class VerifyOptions:
    """Knobs of :class:`LineVerifier` (the values measured best in issue #29)."""

    # decode from the cut of a verified line at least this long before the line (and before the last verified
    # line, where no pause of pause_s came after it)
    context_s: float = 2.0
    lookahead_s: float = 0.7  # verify once this much audio has arrived after the line's end (asr.verify_lookahead_s)
    # a line whose decode has other words than the drafter's is decoded again once this much audio after it has
    # arrived (0: never; asr.verify_recheck_s): the audio after a line changes how Whisper hears it, and where both
    # models already agree the line is committed at lookahead_s
    recheck_s: float = 0.0
    min_window_s: float = 0.0  # ... and the verifier's audio (context, line, what followed) is this long
    # the drafter's window is trimmed at a line end once it is longer than this (at most; StreamingOptions'
    # buffer_trim_s, 8 s, where lower): its words are drafts, and each line is decoded again with its own context
    drafter_trim_s: float = 5.0
    pause_s: float = 3.0  # the context never reaches back over a pause this long between lines
    preroll_s: float = 0.6  # a line after such a pause is decoded from this long before its first word
    anchor_s: float = 0.7  # the drafter's last word is looked for this near its end time
    late_probability: float = 0.3  # words after the line's end below this probability are dropped
    # a line whose decode looped or held no words waits for the next line to be verified with it, but no longer
    # than until this much audio after it has arrived: then it is decoded again alone, with that audio after it
    retry_after_s: float = 3.0
    max_window_s: float = 28.0  # at most this much audio per verifier decode (Whisper reads 30 s)
    keep_s: float = 45.0  # recent audio kept for verification
    prompt_chars: int = 200  # the verified text before the decoded audio given as its prompt (0: none)
    # a line the drafter ended as a sentence, which the verifier heard go on (no . ? ! at its end), is verified
    # again together with the next line, so that a committed line (and its translation) is a whole sentence;
    # off by default: such lines are confirmed a line later (asr.verify_whole_sentences)
    join_unfinished: bool = False


@dataclass
class VerifiedLine:
    """One verified line and how it was made (for tests, benchmarks and the summary)."""

    sentence: Sentence  # as committed (in LineVerifier.dropped: the drafter's, not committed)
    drafted: str  # the drafter's text of the line
    start: float  # the audio the verifier decoded (stream seconds)
    end: float
    prompt: str
    words: list[Word] = field(default_factory=list)  # every word of that decode (stream seconds)
    kept: tuple[int, int] = (0, 0)  # words[kept[0]:kept[1]] are the line (less left_out, less a loop: kept_words)
    left_out: tuple[int, ...] = ()  # indices in that range of a phrase said again squashed (squashed_copy)
    fallback: bool = False  # the drafter's line was committed (degenerate or empty decode)
    seconds: float = 0.0  # the verifier's decode time
    drafted_end: float = 0.0  # where the drafter's line ended (stream seconds)
    drafted_start: float = 0.0  # ... and where it began
    model: str = ""  # the engine whose greedy decode the line is (VerifiedEngine.cross_check: either model)
    first: list[Word] = field(default_factory=list)  # a rechecked line: its words in the decode before the recheck
    merged: bool = False  # two drafter lines verified as one (a loop, no words, or a sentence heard going on)


def word_key(text: str) -> str:
    """A word as compared between models: lower case, no punctuation."""
    return _KEY.sub("", text).lower()


def select_line(words: list[Word], verified: list[Word], after: float, drafted_last: str, line_end: float,
                options: VerifyOptions) -> tuple[int, int]:
    """Which of a verifier decode's ``words`` (stream seconds) make the line: ``(first, last)`` indices.

    The line starts after what is already verified: words whose middle lies after ``after`` (the
    end of the last verified word, or the last cut), or after the last place before that where the
    decode heard the verified last two words (:func:`_after_same_last`), less a repeat of the verified
    tail's last words. It ends at the word matching the drafter's last word ``drafted_last`` within
    ``anchor_s`` of ``line_end``; without one, at the last word whose middle lies before the line's
    end. Leading bare punctuation and trailing improbable words after the line's end are left out."""
    first = 0
    while first < len(words) and ((words[first].start + words[first].end) / 2 <= after
                                  or not words[first].text.strip()):
        first += 1
    if verified:
        first = _after_same_last(words, first, verified)
    if first < len(words) and verified:
        keys = [word_key(w.text) for w in words]
        tail = [word_key(w.text) for w in verified[-12:]]
        if abs(words[first].start - after) < 1.0:
            first = _after_tail(keys, first, tail[-5:])
        first = _after_heard_again(keys, first, tail)
    last = first
    anchored = False
    if drafted_last:
        best = None
        for i in range(first, len(words)):
            w = words[i]
            if abs(w.end - line_end) <= options.anchor_s and \
                    difflib.SequenceMatcher(None, word_key(w.text), drafted_last).ratio() >= 0.7:
                if best is None or abs(w.end - line_end) < abs(words[best].end - line_end):
                    best = i
        if best is not None:
            last, anchored = best + 1, True
    if not anchored:
        last = first
        while last < len(words) and (words[last].start + words[last].end) / 2 < line_end:
            last += 1
    while last > first and words[last - 1].start >= line_end - 0.05 \
            and words[last - 1].probability < options.late_probability:
        last -= 1
    while first < last and not _SPOKEN.search(words[first].text):
        first += 1
    return first, last


def _after_same_last(words: list[Word], first: int, verified: list[Word]) -> int:
    """Where the decode's new words begin when it heard the verified text's end before ``first``: right
    after the last time it heard the verified last two words before ``first``, or after its first word
    where that is the verified last word (a one-word line, which the window starts with: Whisper stamps
    it at the window's start, seconds early). The decode's window opens on the verified lines, so it
    says them first, and their times need not be the verified ones: Whisper stretches a line's last
    word over the pause after it, and the next decode can place the next word's start inside that
    stretch; by its middle alone it is taken for verified ("Thank you." ended at 95.62 s, the next decode
    heard "You will welcome." from 95.42 s, and "You" was lost; "Can" verified at 42.26 s, the next
    decode heard "Can" at 40.76 s and "I" at 42.26 s, and "I" was lost)."""
    keys = [word_key(w.text) for w in words[:first]]
    tail = [word_key(w.text) for w in verified[-2:]]
    new = None
    if len(tail) == 2:
        new = next((k + 1 for k in range(len(keys) - 1, 0, -1) if keys[k - 1:k + 1] == tail), None)
    if new is None and keys and keys[0] == tail[-1] and verified[-1].start >= words[0].start - SAME_WORD_S:
        new = 1
    if new is None or not all(_SPOKEN.search(w.text) for w in words[new:first]):
        return first
    return new


def _after_tail(keys: list[str], first: int, tail: list[str]) -> int:
    """Where the decode's new words begin when its timing put some of the verified ``tail`` (its
    last words' keys) after ``first``: after the longest run of the tail's last words that ends at
    ``first`` or within that run's length after it (the nearest end first). A run ending at
    ``first`` itself means the decode heard the verified words where they were, so a word that
    repeats them ("words, words, words") is new and stays. ``keys``: the decode's words' keys."""
    for n in range(len(tail), 0, -1):
        for end in range(max(first, n), min(first + n, len(keys)) + 1):
            if keys[end - n:end] == tail[-n:]:
                return end
    return first


def _after_heard_again(keys: list[str], first: int, tail: list[str]) -> int:
    """Where the decode's new words begin when they start by saying the verified ``tail`` (its last
    words' keys) again, timed after it, with its last word heard differently: after that repeat.
    Either the decode heard the tail up to its last word before ``first`` and that word again at
    ``first``, or four words or more from within two words of ``first`` repeat the tail up to its
    last word or the one before. A decode that heard the tail's end before ``first`` hears new words
    after it (said again). A live run of the reading committed "… began printing in the monastery
    of Subeck" and then "and Panartes began printing in the monastery of Subeaco near Rome …": the
    second decode timed the words after the first's and heard the last one differently, so neither
    the time nor :func:`_after_tail`'s exact match kept it from being committed twice. ``keys``: the
    decode's words' keys."""
    if len(tail) < 3 or first >= len(keys):
        return first

    def heard_last(i: int) -> bool:  # the tail's last word, perhaps heard differently
        return i < len(keys) and difflib.SequenceMatcher(None, keys[i], tail[-1]).ratio() >= 0.5

    if keys[max(0, first - 2):first] == tail[-3:-1] and keys[first] != tail[-1] and heard_last(first):
        return first + 1
    if keys[max(0, first - 3):first] == tail[-3:]:
        return first
    window = keys[first:first + len(tail) + 1]
    for a, b, size in difflib.SequenceMatcher(None, tail, window, autojunk=False).get_matching_blocks():
        if size >= 4 and a + size >= len(tail) - 1 and b <= 2:
            new = first + b + size
            return new + 1 if a + size < len(tail) and heard_last(new) else new
    return first


def carried_range(before: VerifiedLine, verified: list[Word], after: float, drafted_last: str, line_end: float,
                  options: VerifyOptions) -> tuple[int, int] | None:
    """Where the decode of the line ``before`` went on past that line into the next one's words, up to
    the drafter's last word ``drafted_last`` of the next line (ending at ``line_end``): those words'
    indices in ``before.words`` (as :func:`select_line` picks them after ``after``), or None. Used
    where the next line's own decode has nothing new: the two decodes disagreed on where one line
    ends, and the words between them were lost (SNG1640: "Very" ended one line, "reasonable." was
    past its end, and the next decode heard no "reasonable" after "Very"). They are the verifier's
    greedy words for that decode's audio and prompt, so the line is verified."""
    heard = heard_past(before)
    if not drafted_last or not heard:
        return None
    offset = before.kept[1]
    first, last = select_line(heard, verified, after, drafted_last, line_end, options)
    if first == last or difflib.SequenceMatcher(None, word_key(heard[last - 1].text), drafted_last).ratio() < 0.7:
        return None
    return offset + first, offset + last


def heard_past(line: VerifiedLine) -> list[Word]:
    """The words a line's decode heard after the line: up to where their times collapse, and none
    where the decode loops (only its words before the loop are heard, not past its line)."""
    if degenerate("".join(w.text for w in line.words)):
        return []
    return line.words[line.kept[1]:max(line.kept[1], collapse_start(line.words))]


def before_loop(words: list[Word]) -> int:
    """How many of a degenerate decode's words come before its loop: the longest run of leading
    words that is not degenerate itself, less the bare punctuation at its end (where a loop of
    dashes or dots begins)."""
    n = len(words)
    while n > 0 and degenerate("".join(w.text for w in words[:n])):
        n -= 1
    while n > 0 and not _SPOKEN.search(words[n - 1].text):
        n -= 1
    return n


def squashed_echo(line: list[Word], drafted: str) -> int:
    """How many of a decode's last words (``line``) are Whisper saying the words before them again,
    squashed into the end of its window: a last phrase of one to three words that repeats the words
    right before it, in less than half their time, where the drafter (``drafted``, its text of the
    line) did not hear it twice. Real-time decodes end at any instant, and Whisper fills the window's end so
    ("Of course." said once became "Of course. Of course.", the copy's two words at one instant;
    "Okay, great. Okay, great." the copy in 0.1 s where it was said in 0.75 s). A phrase said twice
    takes its time twice, or the drafter heard it twice: it stays."""
    keys = [word_key(w.text) for w in line]
    drafted_keys = [k for k in (word_key(t) for t in drafted.split()) if k]
    for n in (3, 2, 1):
        if len(line) < 2 * n or keys[-n:] != keys[-2 * n:-n] or not all(keys[-n:]):
            continue
        twice = keys[-2 * n:]
        if any(drafted_keys[i:i + 2 * n] == twice for i in range(len(drafted_keys) - 2 * n + 1)):
            continue
        copy, said = line[-n:], line[-2 * n:-n]
        if copy[-1].end - copy[0].start < 0.5 * (said[-1].end - said[0].start):
            return n
    return 0


def squashed_copy(words: list[Word], drafted: str) -> tuple[int, int] | None:
    """Where a decode's words (``words``) hold a phrase of two to six words squashed into less than half
    the time of the same phrase said right after it, where the drafter (``drafted``, its text of the
    line) did not hear it twice: ``(start, length)`` of the squashed copy, the first such, or None.
    Whisper says a phrase early, its words at one instant, and then again where it was said (SNG1640:
    "Okay, one more thing." in 0.4 s at 56.56 s, then in 1.3 s from 57.86 s where it was said; "very
    reasonable." at one instant, then in 0.8 s). Left in, the line commits the phrase twice, or ends at
    the copy's word that matches the drafter's last and the next line says the phrase again. The copy
    after its phrase, at a decode's end, is :func:`squashed_echo`'s."""
    keys = [word_key(w.text) for w in words]
    drafted_keys = [k for k in (word_key(t) for t in drafted.split()) if k]
    for i in range(len(words)):
        for n in range(min(6, (len(words) - i) // 2), 1, -1):
            twice = keys[i:i + 2 * n]
            if keys[i:i + n] != keys[i + n:i + 2 * n] or not all(twice):
                continue
            if any(drafted_keys[k:k + 2 * n] == twice for k in range(len(drafted_keys) - 2 * n + 1)):
                continue
            copy, said = words[i:i + n], words[i + n:i + 2 * n]
            if copy[-1].end - copy[0].start < 0.5 * (said[-1].end - said[0].start):
                return i, n
    return None


def select_spoken(words: list[Word], verified: list[Word], after: float, drafted: str, drafted_last: str,
                  line_end: float, options: VerifyOptions) -> tuple[int, int, tuple[int, ...]]:
    """:func:`select_line` over a decode's spoken ``words`` with a squashed copy of a phrase said right
    after it (:func:`squashed_copy`) not in view: ``(first, last, left_out)``, indices in ``words``,
    ``left_out`` the copy's where the line holds it."""
    copy = squashed_copy(words, drafted)
    if copy is None:
        return *select_line(words, verified, after, drafted_last, line_end, options), ()
    i, n = copy
    first, last = select_line(words[:i] + words[i + n:], verified, after, drafted_last, line_end, options)
    first = first if first < i else first + n
    last = last if last <= i else last + n
    return first, last, tuple(range(i, i + n)) if first < i < last else ()


def kept_words(line: VerifiedLine) -> list[Word]:
    """The words of a verified line's decode that make the line: its kept range, less the squashed copy
    left out and less a phrase repeated at once (:func:`unrepeat`)."""
    first, last = line.kept
    return unrepeat([w for k, w in enumerate(line.words[first:last], first) if k not in line.left_out])


def unrepeat(words: list[Word]) -> list[Word]:
    """Without an immediate repeat of a phrase of three or more words (a loop the compression
    ratio does not catch)."""
    keys = [word_key(w.text) for w in words]
    i = 0
    while i < len(keys):
        for n in range(min(12, (len(keys) - i) // 2), 2, -1):
            if keys[i:i + n] == keys[i + n:i + 2 * n]:
                del words[i + n:i + 2 * n]
                del keys[i + n:i + 2 * n]
                break
        else:
            i += 1
    return words


@dataclass
class _Pending:
    sentence: Sentence
    drafted_last: str
    merged: bool = False  # two drafter lines held as one, after the first's decode looped or held no words
    waiting: bool = False  # its decode looped or held no words: it waits for the next line
    ready_at: float = 0.0  # not verified before this much audio has arrived (a recheck: VerifyOptions.recheck_s)
    first: VerifiedLine | None = None  # ... and the line as the decode before the recheck heard it


_MERGE = object()  # _verify's answer for a line to be verified again together with the next one
_RECHECK = object()  # ... for a line to be decoded again once more audio after it has arrived


class LineVerifier:
    """A :class:`StreamingTranscriber` whose finished lines are confirmed by a verifier.

    ``engine`` must offer ``verify(audio, prompt, language, abort)`` (a :class:`VerifiedEngine`,
    or a :class:`~core.asr.threaded.ThreadedEngine` around one). Same interface as the
    transcriber it wraps (``insert_audio``, ``process``, ``push``, ``finish``, ``abort``); its
    other attributes are the wrapped transcriber's.
    """

    def __init__(self, transcriber: StreamingTranscriber, engine, options: VerifyOptions | None = None,
                 on_problem: Callable[[str], None] | None = None) -> None:
        self.transcriber = transcriber
        self.engine = engine
        self.verify_options = options or VerifyOptions()
        self._on_problem = on_problem  # told once, in one sentence, when the verifier fails
        self._audio = AudioWindow(self.verify_options.keep_s)
        self._received = 0.0
        self._pending: list[_Pending] = []
        self._verified_words: list[Word] = []
        self._cut = 0.0  # where the last verified line ended
        self._last_end = -1e9  # the drafter's end of the last verified line
        self._index = 0
        self._last_update: TranscriptUpdate | None = None
        self.lines: list[VerifiedLine] = []
        self.dropped: list[VerifiedLine] = []  # drafter's lines the verifier heard nothing new in (none committed)
        self.fallbacks = 0
        self.merges = 0  # lines verified again with the next one (a loop, no words, or a sentence that goes on)
        self.carried = 0  # lines the verifier heard in the decode before theirs (see _carried)
        self.rechecks = 0  # lines decoded again later, their first decode having other words than the drafter's
        self.unverified = 0  # lines committed as the drafter heard them (Stop, a verifier failure, a fallback)
        self.failures = 0  # verifier decodes that failed (an error, not a stop)
        self.verify_seconds = 0.0

    def __getattr__(self, name: str):
        return getattr(self.transcriber, name)

    @property
    def held(self) -> tuple[str, ...]:
        """The drafter's finished lines not yet committed nor dropped (the one being verified first)."""
        return tuple(p.sentence.text for p in self._pending)

    # -- the transcriber's interface ------------------------------------------------------------
    def insert_audio(self, chunk: np.ndarray) -> None:
        chunk = np.asarray(chunk, dtype=np.float32).reshape(-1)
        if chunk.size:
            if self._audio.seconds == 0.0:
                self._audio.offset = self._received
            if self._audio.free < chunk.size:  # room for this chunk and 10 s more (a trim moves the rest)
                self._audio.trim_to(self._audio.offset + (chunk.size - self._audio.free) / SAMPLE_RATE + 10.0)
            self._audio.append(chunk)
            self._received += chunk.size / SAMPLE_RATE
        self.transcriber.insert_audio(chunk)

    def process(self) -> TranscriptUpdate | None:
        if self._pending and self._due(self._pending[0]) and self.transcriber.decode_due():
            # the verifier's decode reads the newest audio too: this step verifies, and the drafter's
            # decode waits for the next step (one drafter decode fewer per line)
            return self._after(None, final=False)
        return self._after(self.transcriber.process(), final=False)

    def push(self, chunk: np.ndarray) -> list[TranscriptUpdate]:
        return push_pieces(self, chunk)

    def finish(self, decode: bool = True) -> TranscriptUpdate:
        """End of stream (or a pause): the drafter commits its unfinished line (decoding what is left
        unless ``decode`` is False) and every held line is verified now, except after :meth:`abort`
        (a quick Stop), when each is committed as the drafter heard it, marked unverified."""
        update = self.transcriber.finish(decode)
        result = self._after(update, final=True)
        assert result is not None
        return result

    def abort(self) -> None:
        self.transcriber.abort()

    # -- verification ---------------------------------------------------------------------------
    def _after(self, update: TranscriptUpdate | None, final: bool) -> TranscriptUpdate | None:
        if update is not None:
            self._last_update = update
            for s in update.sentences:
                words = s.text.split()
                self._pending.append(_Pending(s, word_key(words[-1]) if words else ""))
        done: list[Sentence] = []
        held = len(self._pending)
        while self._pending and (final or self._ready(self._pending[0])):
            # a line leaves the held ones only once it is committed (or dropped): a Stop that interrupts
            # its verification leaves it held, and finish() then commits it as the drafter heard it
            pending = self._pending[0]
            if pending.waiting:
                if len(self._pending) > 1:
                    self._merge_next()
                    continue
                if not final and not self._due(pending):
                    break
                pending.merged = True  # no next line in time: decoded again alone, with more audio after it
            if self.transcriber.aborted.is_set():
                sentence = self._unchecked(pending)
            else:
                try:
                    may_merge = not pending.merged and (not final or len(self._pending) > 1)
                    sentence = self._verify(pending, may_merge, may_recheck=not final)
                except Interrupted:
                    if not final:
                        break
                    sentence = self._unchecked(pending)  # the end of the stream: nothing stays held
                except Exception as exc:  # a failing verifier must not lose the line
                    sentence = self._after_failure(pending, exc)
            if sentence is _RECHECK:
                break
            if sentence is _MERGE:
                if len(self._pending) > 1:
                    self._merge_next()
                else:
                    pending.waiting = True
                continue
            self._pending.pop(0)
            if sentence is not None:
                done.append(sentence)
        if update is None and len(self._pending) == held:  # nothing decoded, no held line verified
            return None
        base = update or self._last_update
        if base is None:
            return None
        audio_time = base.audio_time if update is not None else max(base.audio_time, self._received)
        return TranscriptUpdate(done, base.committed, base.tentative, audio_time, base.window_seconds,
                                base.timings if update is not None else type(base.timings)(),
                                final=final or (update is not None and update.final), speaker=base.speaker,
                                paused=update.paused if update is not None else False,
                                tentative_words=base.tentative_words,
                                held=tuple(p.sentence.text for p in self._pending), drafts=True)

    def _merge_next(self) -> None:
        """The first held line joins the next one: they are verified as one line (the drafter's
        words of both, the next one's last word as the anchor)."""
        a, b = self._pending[0].sentence, self._pending[1].sentence
        joined = Sentence(a.index, f"{a.text} {b.text}".strip(), a.start, b.end, b.speaker, verified=b.verified)
        drafted_last = self._pending[1].drafted_last or self._pending[0].drafted_last
        self._pending[0:2] = [_Pending(joined, drafted_last, merged=True)]
        self.merges += 1

    def _after_failure(self, pending: _Pending, exc: Exception) -> Sentence:
        """A verifier decode failed (out of memory, a broken model): the line is committed as the
        drafter heard it, marked unverified, and the first failure is told in one sentence."""
        self.failures += 1
        logger.error("verifier failed on the line %r: %s", pending.sentence.text, exc, exc_info=True)
        if self.failures == 1 and self._on_problem is not None:
            self._on_problem(f"The speech verifier failed ({exc}); lines it cannot check are kept as first "
                             "heard and marked unverified.")
        return self._as_drafted(pending)

    def _due(self, pending: _Pending) -> bool:
        """Whether a held line is to be verified now: ready, and where its decode looped, no longer
        waiting for the next line (one has finished, or ``retry_after_s`` after it has arrived)."""
        if pending.waiting:
            return len(self._pending) > 1 or self._received >= pending.sentence.end + self.verify_options.retry_after_s
        return self._ready(pending)

    def _ready(self, pending: _Pending) -> bool:
        """Whether a held line can be verified now: ``lookahead_s`` after its end has arrived (and
        its recheck's time, if it waits for one), and its decode would read at least ``min_window_s``
        of audio."""
        sentence = pending.sentence
        if self._received < max(sentence.end + self.verify_options.lookahead_s, pending.ready_at):
            return False
        return self._received - self._context_start(sentence) >= self.verify_options.min_window_s

    def _context_start(self, sentence: Sentence) -> float:
        """Where the verifier's audio starts: just before the line after a pause; else back over
        verified lines (each from the end of the one before it) until ``context_s`` before the
        line, never over a pause of ``pause_s``, and over the last verified line at least (a
        silence alone is no context)."""
        opts = self.verify_options
        lines = [x.sentence for x in self.lines]
        if not lines or (sentence.start - self._last_end > opts.pause_s and not self._heard_before(sentence.start)):
            return max(self._cut, sentence.start - opts.preroll_s)
        for i in range(len(lines) - 1, 0, -1):  # take line i, then see whether that is enough
            if lines[i].start - lines[i - 1].end > opts.pause_s:
                return max(0.0, lines[i].start - opts.preroll_s)
            start = lines[i - 1].end
            if sentence.start - start >= opts.context_s:
                return start
        return max(0.0, lines[0].start - opts.preroll_s)

    def _heard_before(self, start: float) -> bool:
        """Whether the last verified line's decode heard speech after that line and before ``start``
        (two words or more): then the drafter's lines skipped it (after a stall, its decode of all
        the audio since at once can leave a stretch in no line), and the time between the lines is
        no pause: the next decode reads it, so its words are committed rather than lost."""
        before = self.lines[-1]
        if before.fallback:
            return False
        return sum(1 for w in heard_past(before) if _SPOKEN.search(w.text) and (w.start + w.end) / 2 > self._cut
                   and w.end < start) >= 2

    def _verify(self, pending: _Pending, may_merge: bool = False, may_recheck: bool = False):
        opts = self.verify_options
        s = pending.sentence
        end = self._received
        start = max(self._context_start(s), self._audio.offset, end - opts.max_window_s)
        prompt = prompt_from((w for w in self._verified_words if w.end <= start + 0.01), opts.prompt_chars)
        held = self._audio.view()
        i0 = int(round((start - self._audio.offset) * SAMPLE_RATE))
        i1 = int(round((end - self._audio.offset) * SAMPLE_RATE))
        audio = np.array(held[max(0, i0):max(0, i1)], dtype=np.float32)
        t0 = time.perf_counter()
        hypothesis = self.engine.verify(audio, prompt, self.transcriber.options.language,
                                        abort=self.transcriber.aborted)
        seconds = time.perf_counter() - t0
        self.verify_seconds += seconds
        words = [w.shifted(start) for w in hypothesis.words]
        after = min(self._verified_words[-1].end, self._cut) if self._verified_words else self._cut
        looped = looping(hypothesis)
        looped_from = before_loop(words) if looped else len(words)
        heard = words[:min(looped_from, collapse_start(words))]
        collapsed = len(heard) < looped_from  # the words' times collapse before any loop
        # the decode is speech up to where it collapses: when that is past the drafter's line, it heard the line's
        # time and found nothing new there, as a decode without the collapse would tell
        heard_past = collapsed and words[len(heard)].start >= s.end
        # a copy of the decode's last words squashed into its end is not speech: it is left out before the
        # line is chosen (the drafter's last word, said again in it, would otherwise end the line there)
        spoken = len(heard) - squashed_echo(heard, s.text)
        # ... and so is a phrase said early, squashed, right before the words as said
        first, last, left_out = select_spoken(heard[:spoken], self._verified_words, after, s.text,
                                              pending.drafted_last, s.end, opts)
        line = unrepeat([w for k, w in enumerate(words[first:last], first) if k not in left_out])
        # where the decode stops being speech right after the line, the line is heard whole only if it
        # ends with the drafter's last word
        cut_short = collapsed and last >= len(heard) and not (
            line and difflib.SequenceMatcher(None, word_key(line[-1].text), pending.drafted_last).ratio() >= 0.7)
        record = VerifiedLine(s, s.text, start, end, prompt, words, (first, last), left_out=left_out,
                              seconds=seconds, drafted_end=s.end, drafted_start=s.start, model=hypothesis.model,
                              first=kept_words(pending.first) if pending.first else [], merged=pending.merged)
        if not line and not looped and (not collapsed or heard_past) and words:
            # the verifier heard nothing new here: this line's words were verified with the line before,
            # or it heard no words where the drafter heard this line
            carried = self._carried(pending, after)
            if carried is not None:
                return carried
            self._cut = max(self._cut, s.end)
            self._last_end = s.end
            self.dropped.append(record)
            logger.info("verifier gave %r for the line %r; nothing new there, nothing committed",
                        hypothesis.text[:80], s.text)
            return None
        if (looped and last >= looped_from) or cut_short or not line:  # empty, or a loop reaching into the line
            if may_merge:
                logger.info("verifier gave %r for the line %r; verifying it again with the next line",
                            hypothesis.text[:80], s.text)
                return _MERGE
            self.fallbacks += 1
            record.fallback = True
            logger.info("verifier gave %r for the line %r; keeping the drafter's", hypothesis.text[:80], s.text)
            sentence = self._as_drafted(pending)
        else:
            if may_merge and self._goes_on(pending, line):
                logger.info("the verifier heard the line %r go on (%r); verifying it again with the next line",
                            s.text, "".join(w.text for w in line).strip()[-40:])
                return _MERGE
            if may_recheck and self._rechecks(pending, line):
                pending.first = record
                return _RECHECK
            sentence = self._emit(s, line, verified=True)
        record.sentence = sentence
        self.lines.append(record)
        return sentence

    def _goes_on(self, pending: _Pending, line: list[Word]) -> bool:
        """Whether the line is to be verified again with the next one: the drafter ended a sentence
        where the verifier heard it go on (tiny.en puts a full stop or "..." at a speaker's pause; a
        line "Yes, I'd like to" committed alone, and "book a taxi." after it, are each translated as a
        fragment)."""
        return (self.verify_options.join_unfinished and ends_sentence(pending.sentence.text)
                and not ends_sentence(line[-1].text))

    def _rechecks(self, pending: _Pending, line: list[Word]) -> bool:
        """Whether the line is to wait for its recheck: its decode heard other words than the drafter
        did, and ``recheck_s`` after it has not yet arrived (then it is held until it has)."""
        at = pending.sentence.end + self.verify_options.recheck_s
        if pending.ready_at or self.verify_options.recheck_s <= self.verify_options.lookahead_s or self._received >= at:
            return False
        heard = [k for k in (word_key(w.text) for w in line) if k]
        drafted = [k for k in (word_key(t) for t in pending.sentence.text.split()) if k]
        if heard == drafted:
            return False
        pending.ready_at = at
        self.rechecks += 1
        return True

    def _carried(self, pending: _Pending, after: float) -> Sentence | None:
        """The line as the decode before it heard it (:func:`carried_range`), committed as verified."""
        s = pending.sentence
        if not self.lines or self.lines[-1].fallback or s.end <= after:
            return None  # (a line ending before what is verified is one said again, not new words)
        before = self.lines[-1]
        kept = carried_range(before, self._verified_words, after, pending.drafted_last, s.end, self.verify_options)
        if kept is None:
            return None
        record = VerifiedLine(s, s.text, before.start, before.end, before.prompt, before.words, kept,
                              drafted_end=s.end, drafted_start=s.start, model=before.model)
        record.sentence = self._emit(s, unrepeat(list(before.words[kept[0]:kept[1]])), verified=True)
        self.lines.append(record)
        self.carried += 1
        logger.info("the line %r was heard by the decode before it: %r", s.text, record.sentence.text)
        return record.sentence

    def _unchecked(self, pending: _Pending) -> Sentence:
        """A held line committed without its (next) decode, at a Stop or the end of the stream: as its
        first decode heard it where it was waiting for a recheck (verified: the verifier's greedy
        words), else as the drafter heard it, marked unverified."""
        first = pending.first
        if first is None:
            return self._as_drafted(pending)
        first.sentence = self._emit(pending.sentence, unrepeat(first.words[first.kept[0]:first.kept[1]]), verified=True)
        self.lines.append(first)
        return first.sentence

    def _as_drafted(self, pending: _Pending) -> Sentence:
        """The line as the drafter heard it, committed and marked unverified (and counted)."""
        s = pending.sentence
        self.unverified += 1
        # word by word (times spread over the line): the verified tail is compared word by word with the
        # next decode (_after_heard_again); as one "word", the line before it looked like the tail's end,
        # and a phrase said again after the line ("… after 2.30 in the morning, is that correct?") was skipped
        said = s.text.split() or [s.text]
        step = (s.end - s.start) / len(said)
        return self._emit(s, [Word(s.start + i * step, s.start + (i + 1) * step, " " + t) for i, t in enumerate(said)],
                          verified=False)

    def _emit(self, drafted: Sentence, words: list[Word], verified: bool) -> Sentence:
        text = "".join(w.text for w in words).strip()
        sentence = Sentence(self._index, text, words[0].start, max(words[-1].end, words[0].start), drafted.speaker,
                            verified=verified)
        self._index += 1
        self._verified_words += words
        del self._verified_words[:-200]
        self._cut = max(drafted.end, words[-1].end)
        self._last_end = drafted.end
        return sentence


def make_transcriber(engine, options: StreamingOptions, verify: VerifyOptions | None = None,
                     on_problem: Callable[[str], None] | None = None):
    """The streaming transcriber for ``engine``: wrapped in a :class:`LineVerifier` when the engine
    verifies lines (``engine.verifies_lines``), its drafter's window trimmed at
    ``verify.drafter_trim_s``; ``on_problem`` is told once when the verifier fails."""
    if not getattr(engine, "verifies_lines", False):
        return StreamingTranscriber(engine, options)
    verify = verify or VerifyOptions()
    drafting = dataclasses.replace(options, buffer_trim_s=min(options.buffer_trim_s, verify.drafter_trim_s))
    return LineVerifier(StreamingTranscriber(engine, drafting), engine, verify, on_problem)


def mean_log_prob(log_probs: list[float]) -> float:
    """A decode's mean token log-probability under one model (−∞ for no tokens)."""
    return sum(log_probs) / len(log_probs) if log_probs else -math.inf


# a window is cross-checked only where the verifier's decode is this unsure (:func:`doubt` below it): where
# base is sure the drafter seldom wins, and long, clearly spoken lines would pay a second decode for nothing,
# while nearly every window of a call is unsure (docs/BENCHMARKS.md, `sotto bench meeting` and `bench live`)
CROSS_CHECK_BELOW = -0.2


def doubt(hypothesis) -> float:
    """How sure a model is of its decode: the mean log-probability of its words (−∞ for no words)."""
    return mean_log_prob([math.log(max(w.probability, 1e-6)) for w in hypothesis.words])


def second_likelier(first: list[list[float]], second: list[list[float]]) -> bool:
    """Whether the second of two decodes of a window is the likelier: its mean token
    log-probability under each model (``first[i]``, ``second[i]``: model i's token log-probabilities
    of each decode), summed over the models, is higher. Per token, so that a decode is neither
    favoured nor refused for being shorter; both models, since each finds its own decode likely."""
    return sum(map(mean_log_prob, second)) > sum(map(mean_log_prob, first))


class VerifiedEngine:
    """A drafter engine that streams and a verifier engine that confirms lines (both
    :class:`~core.asr.engine.FasterWhisperEngine` in the app): ``transcribe`` is the drafter's,
    ``verify`` the verifier's greedy decode.

    With ``cross_check`` (``asr.cross_check``) the drafter decodes each verified window the
    verifier is unsure of (:data:`CROSS_CHECK_BELOW`) too, and ``verify`` returns whichever of the
    two greedy decodes both models find likelier
    (:func:`second_likelier`): on conversation neither model hears every line best (on the calls
    base does better, on the mfa clips tiny.en; `sotto bench meeting`). Each line is then still one
    model's greedy output, named in ``Hypothesis.model``."""

    verifies_lines = True

    def __init__(self, drafter, verifier, cross_check: bool = False) -> None:
        self.drafter = drafter
        self.verifier = verifier
        self.cross_check = cross_check
        self.chosen: Counter[str] = Counter()  # how many cross-checked windows each model's decode won
        self.name = f"{drafter.name} verified by {verifier.name}" + (" (cross-checked)" if cross_check else "")

    @property
    def compute_type(self) -> str:
        """The drafter's precision (the app gives both models the same)."""
        return self.drafter.compute_type

    def transcribe(self, audio, prompt="", language=None, abort=None, previous_transcript=""):
        return self.drafter.transcribe(audio, prompt, language, abort=abort, previous_transcript=previous_transcript)

    def verify(self, audio, prompt="", language=None, abort=None):
        first = dataclasses.replace(self.verifier.transcribe(audio, prompt, language, abort=abort),
                                    model=self.verifier.name)
        if not self.cross_check or (first.words and not looping(first)
                                    and doubt(first) >= CROSS_CHECK_BELOW):
            return first
        try:
            pick = self._likelier(first, audio, prompt, language, abort)
        except Interrupted:
            raise
        except Exception:  # the check is a second opinion: without it the line is still the verifier's
            logger.exception("cross-checking a line with %s failed; the verifier's decode stands", self.drafter.name)
            pick = first
        self.chosen[pick.model] += 1
        return pick

    def _likelier(self, first, audio, prompt, language, abort):
        second = dataclasses.replace(self.drafter.transcribe(audio, prompt, language, abort=abort),
                                     model=self.drafter.name)
        if not second.words or looping(second):
            return first
        if not first.words or looping(first):
            return second
        models = (self.verifier, self.drafter)
        scores = [[m.text_log_probs(audio, h.text, language) for m in models] for h in (first, second)]
        return second if second_likelier(*scores) else first

    def interrupt(self) -> None:
        self.drafter.interrupt()

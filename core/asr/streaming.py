"""Streaming transcription: audio chunks in, :class:`~core.stream.TranscriptUpdate` out.

A whisper_streaming-style policy object (``insert_audio``, ``process``,
``finish``): the growing audio window is re-decoded every ``min_chunk_s`` of
new audio, words that two consecutive hypotheses agree on are committed
(LocalAgreement-2), the window is trimmed at committed sentence ends so it
never exceeds Whisper's 30 s, and committed text before the window is the
prompt. With voice activity detection, silence is dropped before it reaches
the model, and the end of an utterance commits everything heard in it.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from .. import logger
from ..audio.decode import SAMPLE_RATE
from ..audio.vad import VadOptions, VoiceActivityDetector
from ..audio.window import AudioWindow
from ..errors import Interrupted
from ..stream import Sentence, StageTimings, TranscriptUpdate, Word
from ..text import ends_sentence
from .agreement import HypothesisBuffer
from .engine import ASREngine


@dataclass
class StreamingOptions:
    """Knobs of :class:`StreamingTranscriber`."""

    language: str | None = "en"
    min_chunk_s: float = 0.5
    buffer_trim_s: float = 8.0
    max_buffer_s: float = 29.0
    prompt_chars: int = 200
    use_vad: bool = True
    vad_threshold: float = 0.5
    vad_min_silence_s: float = 0.5
    vad_level: bool = True  # the detector hears rumble filtered out and a quiet voice raised (VadInput)
    utterance_end_s: float = 2.0
    pre_roll_s: float = 0.4
    # the pre-roll while the detector still raises a quiet stream's level (VoiceActivityDetector.raising):
    # its first words are heard late, and Whisper hears them in the audio kept before the start
    raising_pre_roll_s: float = 3.0
    # A caption line also ends, once it holds ``clause_min_words`` words, at a clause mark (, ; :)
    # or before a pause of ``pause_break_s`` between two words; 0 = only at sentence ends.
    clause_min_words: int = 6
    pause_break_s: float = 0.3
    max_line_words: int = 20  # a line ends after this many words even without a mark (0: no limit)
    # a decode's words end where their start times collapse (collapse_start): how Whisper times a phrase it
    # repeats at the end of a window; kept, the repeat becomes a line of its own (`sotto bench meeting`)
    cut_collapsed: bool = True
    # at a pause in speech (VAD end), the decode in the pause commits every word heard before it without a
    # second decode agreeing, and a line long enough for a pause to end it ends there (as its next word
    # would, pause_break_s); off, LocalAgreement alone: a line's last words wait for the next speech's
    # decodes, or the utterance's end. Off by default: on held-out calls it committed words that a later
    # decode heard otherwise, or again (`sotto bench meeting --set asr.pause_commit=true`).
    pause_commit: bool = False


_CLAUSE_END = re.compile(r"[,;:，；：、][\"'”’)\]]*$")
_SPOKEN = re.compile(r"\w")  # a word with a letter or digit in it (not bare punctuation)
COMPRESSION_LIMIT = 2.4  # Whisper's own threshold for a looping decode (gzip ratio of its text)
COLLAPSE_RUN, COLLAPSE_SPAN_S = 4, 0.1  # see collapse_start
COLLAPSE_END_RUN, COLLAPSE_END_SPAN_S = 3, 0.02  # ... and at a decode's end
EMPTY_PROMPT_S = 2.0  # an empty decode of this much speech or more drops the prompt (see _decode)
PAUSE_SLACK_S = 0.5  # Whisper's word end times run past the VAD's end of speech by up to this


def degenerate(text: str) -> bool:
    """Whether a decode's text is a hallucinated loop rather than speech: as repetitive as Whisper's
    own ``compression_ratio_threshold`` refuses (``. . . . …``, the same phrase over and over), or
    mostly bare punctuation. Found by the soak benchmark: one such decode fed back through the
    prompt made every later decode of real speech come out as dots."""
    import zlib

    text = text.strip()
    if len(text) < 24:
        return False
    words = text.split()
    if len(words) >= 4 and sum(1 for w in words if not _SPOKEN.search(w)) > len(words) / 2:
        return True
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) > COMPRESSION_LIMIT


def looping(hypothesis) -> bool:
    """Whether a decode (a :class:`~core.asr.engine.Hypothesis`) is a loop rather than speech: stopped
    at the tokens its audio can hold (``runaway``), or :func:`degenerate` text."""
    return hypothesis.runaway or degenerate(hypothesis.text)


def collapse_start(words: list[Word], run: int = COLLAPSE_RUN, span: float = COLLAPSE_SPAN_S) -> int:
    """Where a decode's words stop being speech: the first of ``run`` or more consecutive words that
    start within ``span`` seconds of one another (``len(words)`` where there is none). Nobody says
    four words in a tenth of a second: such a run is Whisper saying the window's text again, or a
    word over and over, with its timing squashed at the end of the audio (seen on telephone
    conversation: "… address for this? Okay. Okay. One more thing. Can I also give the address for
    this?", the repeat all at one instant), and the words from there on are not what was said. (Three
    real words can get starts that close from Whisper's coarse word timing: "this is for" in fast
    speech.) A run the decode opens with (:func:`collapsed_lead`) is not such an end: the words
    after it were timed from the audio. At the decode's end, three words at one instant
    (``COLLAPSE_END_SPAN_S``) are such a repeat too: "Okay, that's perfect." said once, decoded again
    at the window's last instant, was committed twice (tiny.en on a call, AVX2 kernels)."""
    lead = collapsed_lead(words, run, span)
    for i in range(lead, len(words) - run + 1):
        if words[i + run - 1].start - words[i].start <= span:
            return i
    end = len(words)
    while end > lead and words[-1].start - words[end - 1].start <= COLLAPSE_END_SPAN_S:
        end -= 1
    return end if len(words) - end >= COLLAPSE_END_RUN else len(words)


def collapsed_lead(words: list[Word], run: int = COLLAPSE_RUN, span: float = COLLAPSE_SPAN_S) -> int:
    """How many words a decode opens with that are stamped at its first instant, ``run`` or more of
    them (0 where it does not): words Whisper carries over the window's start from the prompt or a
    word the window cut ("I'm going to find a house", the window starting at "find", all three
    stamped at 0.0 s). They have no audio of their own in the window."""
    if len(words) < run or words[run - 1].start - words[0].start > span:
        return 0
    n = run
    while n < len(words) and words[n].start - words[0].start <= span:
        n += 1
    return n


def prompt_from(words, chars: int) -> str:
    """The prompt for the next decode: the last ``chars`` characters of the committed words, bare
    punctuation left out (a prompt of dots makes Whisper answer real speech with dots)."""
    if chars <= 0:
        return ""
    text = "".join(w.text for w in words if _SPOKEN.search(w.text))
    return text[-chars:].strip()
MAX_PIECE_S = 5.0
# With no line ended in the window, it is trimmed at the last committed word only beyond this
# length: a word's end time from Whisper can run into the next words (seen with the meeting test:
# trimming an 11 s window at "for you" cut away "ask what you can do for your").
WORD_TRIM_S = 15.0


def push_pieces(processor, chunk: np.ndarray) -> list[TranscriptUpdate]:
    """Insert ``chunk`` into ``processor`` (a transcriber, or a wrapper with its interface) at most
    ``MAX_PIECE_S`` at a time, processing after each piece; returns the updates. After an abort the
    audio is still taken in but nothing more is decoded."""
    updates = []
    piece = int(MAX_PIECE_S * SAMPLE_RATE)
    for i in range(0, max(1, chunk.shape[0]), piece):
        processor.insert_audio(chunk[i:i + piece])
        if processor.aborted.is_set():
            continue
        try:
            update = processor.process()
        except Interrupted:
            continue
        if update is not None:
            updates.append(update)
    return updates


class StreamingTranscriber:
    """Turns a stream of audio into committed sentences and a tentative tail."""

    def __init__(self, engine: ASREngine, options: StreamingOptions | None = None) -> None:
        self.engine = engine
        self.options = options or StreamingOptions()
        opts = self.options
        self.vad = (
            VoiceActivityDetector(VadOptions(opts.vad_threshold, opts.vad_min_silence_s, level=opts.vad_level))
            if opts.use_vad else None
        )
        self.window = AudioWindow(opts.max_buffer_s + MAX_PIECE_S + 2.0)
        self.hyp = HypothesisBuffer()
        self._history: deque[Word] = deque(maxlen=200)  # recent committed words, for the prompt
        self._sentence_words: list[Word] = []
        self._sentences_done = 0
        self._last_sentence_end = 0.0
        self._received = 0.0  # absolute time of the end of all audio inserted
        self._new_audio = 0.0  # seconds inserted since the last decode
        self._speech = not opts.use_vad  # speech is in the window
        self._pause_pending: float | None = None  # speech paused here; one decode settles agreement
        self._paused_at: float | None = None  # in a pause since this time
        self._pending_timings = StageTimings()
        self.max_window_seconds = 0.0
        self.decodes = 0
        self.decode_seconds = 0.0  # all decodes' time so far
        self.dropped_decodes = 0  # decodes refused as hallucinated loops (see degenerate())
        self.recent_decode_seconds = 0.0  # a moving average of the model's time per decode
        self._last_words: list[Word] = []  # the last decode's words (absolute times)
        self._told_nothing = False  # the last decode was refused as a loop, or all its words were cut
        self.aborted = threading.Event()  # set by abort(): no more decoding

    # -- input -----------------------------------------------------------------------
    def insert_audio(self, chunk: np.ndarray) -> None:
        """Add 16 kHz mono float32 audio (at most a few seconds; see :meth:`push`)."""
        chunk = np.asarray(chunk, dtype=np.float32).reshape(-1)
        if chunk.size == 0:
            return
        chunk_start = self._received
        self._received += chunk.size / SAMPLE_RATE
        if self.vad is not None:
            t0 = time.perf_counter()
            events = self.vad.process(chunk)
            self._pending_timings.vad += time.perf_counter() - t0
            for event in events:
                if event.kind == "start":
                    if not self._speech:
                        # Drop the silence before this utterance, keeping a little pre-roll.
                        self._drop_before(max(self.window.offset, event.time - self._pre_roll()))
                    self._speech = True
                    self._paused_at = self._pause_pending = None
                elif event.kind == "end" and self._speech:
                    self._pause_pending = event.time
        if self.window.free < chunk.size:
            self._make_room(chunk.size)
        if self.window.seconds == 0.0:
            self.window.offset = chunk_start
        self.window.append(chunk)
        self._new_audio += chunk.size / SAMPLE_RATE
        if not self._speech and self.vad is not None:
            # Silence costs nothing: keep only the pre-roll.
            self._drop_before(max(self.window.offset, self._received - self._pre_roll()))
        self.max_window_seconds = max(self.max_window_seconds, min(self.window.seconds, self.options.max_buffer_s))

    def push(self, chunk: np.ndarray) -> list[TranscriptUpdate]:
        """Insert a chunk of any length and process it; returns the updates produced.

        After :meth:`abort` the audio is still taken in but nothing more is decoded.
        """
        return push_pieces(self, chunk)

    def abort(self) -> None:
        """Stop decoding at once, from any thread: a decode waiting for the CPU is skipped
        (one already running finishes). The last hypothesis stays for :meth:`finish`."""
        self.aborted.set()

    # -- decoding --------------------------------------------------------------------
    def process(self) -> TranscriptUpdate | None:
        """Decode if there is enough new speech; None when nothing changed.

        A pause in speech (VAD end) triggers one decode so LocalAgreement can
        settle while the audio context is kept; a pause of ``utterance_end_s``
        ends the utterance: everything still tentative is committed, the
        sentence is closed and the window is emptied.
        """
        opts = self.options
        if self._pause_pending is not None:
            self._paused_at, self._pause_pending = self._pause_pending, None
            return self._decode_step(paused=True)
        if self._paused_at is not None:
            if self._received - self._paused_at >= opts.utterance_end_s:
                return self._end_utterance()
            return None
        return self._decode_step() if self.decode_due() else None

    def decode_due(self) -> bool:
        """Whether :meth:`process` would now decode the window for new speech (not for a pause in
        it, nor to end an utterance)."""
        return (self._pause_pending is None and self._paused_at is None and self._speech
                and self._new_audio >= self.options.min_chunk_s)

    def _decode_step(self, paused: bool = False) -> TranscriptUpdate:
        words = self._decode(self.window.view())
        sentences: list[Sentence] = []
        if not self._told_nothing:
            # A decode refused as a loop (or cut whole where its times collapse) neither confirms nor replaces the last
            # hypothesis: taken as "nothing said", it would throw away words that the utterance's end
            # then has nothing to commit from (a call's 10 s lost after a decode Whisper stamped at 0 s).
            self.hyp.insert(words)
            sentences = self._commit(self.hyp.flush())
            if paused and self._paused_at is not None and self.options.pause_commit:
                settled = self._settled_at_pause(self._paused_at)
                sentences += self._commit(self.hyp.commit_first(settled))
                if settled and self._long_enough():
                    # the pause ends the line now, as its next word would (pause_break_s): any word still
                    # tentative was placed after the pause
                    sentences += self._close_sentence()
        sentences += self._trim()
        return self._update(sentences, paused=paused)

    def _settled_at_pause(self, pause: float) -> int:
        """How many of the tentative words a decode in the pause at ``pause`` settles: those heard
        before it (a word a decode places well into the silence is not)."""
        settled = 0
        for word in self.hyp.tentative():
            if word.end > pause + PAUSE_SLACK_S:
                break
            settled += 1
        return settled

    def _end_utterance(self) -> TranscriptUpdate:
        sentences = self._commit(self.hyp.force_commit())
        sentences += self._close_sentence()
        self.hyp.reset(self._received)
        self.window.clear(self._received)
        self._speech = False
        self._paused_at = None
        return self._update(sentences)

    def finish(self, decode: bool = True) -> TranscriptUpdate:
        """End of stream: decode what is left, commit everything and close the sentence.

        With ``decode=False`` (a quick stop, or a pause) nothing more is decoded:
        the last hypothesis is committed as it stands. The transcriber can take
        more audio afterwards.
        """
        sentences: list[Sentence] = []
        if (decode and self._speech and self.window.seconds > 0.05
                and (self._new_audio > 0 or not self.hyp.tentative())):
            words = self._decode(self.window.view())
            sentences += self._commit(self.hyp.force_commit() if self._told_nothing else self.hyp.commit_final(words))
        else:
            sentences += self._commit(self.hyp.force_commit())
        sentences += self._close_sentence()
        self.hyp.reset(self._received)
        self.window.clear(self._received)
        self._speech = not self.options.use_vad
        self._paused_at = self._pause_pending = None
        return self._update(sentences, final=True)

    def _decode(self, audio: np.ndarray) -> list[Word]:
        prompt = self._prompt()
        offset = self.window.offset
        # the last transcript of the audio still in the window: a speculative engine verifies it first
        previous = "".join(w.text for w in self._last_words if w.start >= offset - 0.01)
        hypothesis = self.engine.transcribe(np.array(audio, dtype=np.float32), prompt, self.options.language,
                                            abort=self.aborted, previous_transcript=previous)
        self._pending_timings.asr += hypothesis.decode_seconds
        self.decodes += 1
        self.decode_seconds += hypothesis.decode_seconds
        self.recent_decode_seconds = (hypothesis.decode_seconds if self.decodes == 1 else
                                      0.7 * self.recent_decode_seconds + 0.3 * hypothesis.decode_seconds)
        self._new_audio = 0.0
        words = [w.shifted(offset) for w in hypothesis.words if w.text.strip()]
        self._told_nothing = False
        if hypothesis.runaway or degenerate("".join(w.text for w in words)):
            # a hallucinated loop: nothing of it is shown or committed, and the next decode starts
            # without the prompt that may have led to it
            logger.warning("dropped a looping decode at %.1f s: %r", offset, "".join(w.text for w in words)[:80])
            self.dropped_decodes += 1
            self._history.clear()
            words, self._told_nothing = [], True
        elif self.options.cut_collapsed:
            kept = words[collapsed_lead(words):collapse_start(words)]
            self._told_nothing = bool(words) and not kept
            words = kept
        if not words and self.window.seconds >= EMPTY_PROMPT_S and self._history:
            # Whisper can answer nothing at all, decode after decode, under a prompt it dislikes (a call
            # lost 18 s after the prompt "6187. Heaven."): the next decode goes without it
            logger.info("an empty decode of %.1f s of speech; the next one without the prompt", self.window.seconds)
            self._history.clear()
        self._last_words = words
        return list(self._last_words)

    def _prompt(self) -> str:
        return prompt_from((w for w in self._history if w.end <= self.window.offset + 0.01), self.options.prompt_chars)

    # -- committing ------------------------------------------------------------------
    def _commit(self, words: list[Word]) -> list[Sentence]:
        sentences = []
        for word in words:
            if not self._sentence_words and not _SPOKEN.search(word.text):
                continue  # a line never starts with bare punctuation (nor is one)
            if self._long_enough() and word.start - self._sentence_words[-1].end >= self.options.pause_break_s:
                sentences += self._close_sentence()  # a pause before this word ends the line
            self._history.append(word)
            self._sentence_words.append(word)
            text = word.text.strip()
            if (ends_sentence(text) or (self._long_enough() and _CLAUSE_END.search(text))
                    or 0 < self.options.max_line_words <= len(self._sentence_words)):
                sentences += self._close_sentence()
        return sentences

    def _long_enough(self) -> bool:
        """The open line may end at a clause: it holds at least ``clause_min_words`` words."""
        n = self.options.clause_min_words
        return n > 0 and len(self._sentence_words) >= n

    def _close_sentence(self) -> list[Sentence]:
        if not self._sentence_words:
            return []
        text = "".join(w.text for w in self._sentence_words).strip()
        sentence = Sentence(self._sentences_done, text, self._sentence_words[0].start, self._sentence_words[-1].end)
        self._sentences_done += 1
        self._last_sentence_end = sentence.end
        self._sentence_words = []
        return [sentence]

    def _trim(self) -> list[Sentence]:
        """Trim the window at a line end beyond ``buffer_trim_s``; when it is nearly full with no
        agreement, its tentative words are committed first. Returns the lines that closed."""
        opts = self.options
        closed: list[Sentence] = []
        if self.window.seconds <= opts.buffer_trim_s:
            return closed
        cut = self._last_sentence_end if self._last_sentence_end > self.window.offset else 0.0
        if (cut <= self.window.offset and self.hyp.last_committed_time > self.window.offset
                and self.window.seconds > WORD_TRIM_S):
            cut = self.hyp.last_committed_time
        if self.window.end_time - max(cut, self.window.offset) > opts.max_buffer_s - opts.min_chunk_s - MAX_PIECE_S:
            # Nothing stable to cut at and the window is nearly full: commit the tentative words.
            forced = self.hyp.force_commit()
            if forced:
                logger.info("window full with no agreement; committing %d tentative words", len(forced))
                closed = self._commit(forced)
                cut = forced[-1].end
            else:
                cut = self.window.end_time - opts.buffer_trim_s
        if cut > self.window.offset:
            self._drop_before(cut)
        return closed

    def _pre_roll(self) -> float:
        opts = self.options
        raising = self.vad is not None and self.vad.raising
        return max(opts.pre_roll_s, opts.raising_pre_roll_s) if raising else opts.pre_roll_s

    def _drop_before(self, time_s: float) -> None:
        self.window.trim_to(time_s)
        self.hyp.pop_committed(time_s)

    def _make_room(self, samples: int) -> None:
        need_s = samples / SAMPLE_RATE
        cut = self.window.end_time + need_s - (self.window.capacity / SAMPLE_RATE)
        logger.warning("audio window overflow; dropping %.2f s of undecoded audio", cut - self.window.offset)
        self._drop_before(cut)

    def _update(self, sentences: list[Sentence], final: bool = False, paused: bool = False) -> TranscriptUpdate:
        timings, self._pending_timings = self._pending_timings, StageTimings()
        committed = "".join(w.text for w in self._sentence_words)
        tentative_words = () if final else tuple(self.hyp.tentative())
        tentative = "".join(w.text for w in tentative_words)
        if not committed.strip():
            tentative = tentative.lstrip()
        return TranscriptUpdate(
            sentences=sentences,
            committed=committed.lstrip(),
            tentative=tentative,
            audio_time=self._received,
            window_seconds=self.window.seconds,
            timings=timings,
            final=final,
            paused=paused,
            tentative_words=tentative_words,
        )

    @property
    def audio_time(self) -> float:
        """Seconds of audio received."""
        return self._received

    @property
    def lines_finished(self) -> int:
        """How many lines (sentences) it has finished so far."""
        return self._sentences_done

"""Real conversation through the default engine (tiny.en streaming, base verifying each line).

A telephone call between two people (SpokenWOZ, in the shared folder's ``gathered/conversation``;
source and licence in its README) streamed with different chunk timings, as live reads differ
from run to run (a stall too: the CPU taken for a while, then all its audio at once), by the default
engine and by tiny.en alone: no stretch is committed twice, whatever the timing, and what both bundled
models hear offline is not lost. On such audio Whisper, at the
end of a window, says the window's text again with its word times squashed into an instant; taken
as the next line, that commits a sentence a second time (issue #48)."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow

DATA = ROOT.parent / "shared" / "data" / "gathered" / "conversation"
# calls and seconds of them: short turns, backchannels, the repeats seen live (SNG1640's from the verifier's
# decode, MUL1423's from the drafter's: its window said again at one instant became a line of its own)
CALLS = [("SNG1640", (35.0, 80.0)), ("MUL1423", (92.0, 120.0))]
REPEAT_N = 4  # a run of this many words said once and committed twice
# words both models hear offline that the committed text may lack. Heard otherwise in place: base, decoding a line
# with 2 s of context, hears a few words otherwise than in 30 s windows ("let me" as "we", "get" as "give", "that is
# it" as "seat"; 1 to 5 in these timings, with AVX2, AVX-512 and Zen 5 kernels, the alignment taking a word or two
# of them for deleted). A line dropped, or a stretch lost to a stall (17 words of SNG0072), loses words outright,
# with nothing in their place
MISSING_MAX = 6
LOST_MAX = 3  # ... of them deleted, nothing heard in their place
# tiny.en alone hears a few words otherwise than offline without losing a stretch ("entrance fee" as
# "intrancy", "okay okay" as one); a stretch lost to a stall is ten words or more
MISSING_MAX_ALONE = 5
STALL_AT_S = 10.0  # where in the excerpt a stall's audio arrives at once


def _twice(words: list[str], reference: list[str], n: int = REPEAT_N) -> list[tuple[str, ...]]:
    """Runs of ``n`` committed words that occur again later, not overlapping, where the reference says
    them at most once."""
    said = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
    first: dict[tuple[str, ...], int] = {}
    out = []
    for i in range(len(words) - n + 1):
        gram = tuple(words[i:i + n])
        if gram in first and first[gram] + n <= i and said[gram] <= 1:
            out.append(gram)
        first.setdefault(gram, i)
    return out


@pytest.fixture(scope="module")
def verified_engine(store):
    from core.asr import FasterWhisperEngine
    from core.asr.verified import VerifiedEngine

    return VerifiedEngine(FasterWhisperEngine(store.resolve("whisper-tiny.en")),
                          FasterWhisperEngine(store.resolve("whisper-base")))


@pytest.mark.parametrize("call, excerpt", CALLS)
def test_a_real_call_is_committed_once_and_keeps_what_offline_decoding_hears(verified_engine, call, excerpt):
    """Each chunk timing: no stretch committed twice, and at most ``MISSING_MAX`` of the words that both
    bundled models hear right offline (greedy, the same audio) missing from the committed text, at most
    ``LOST_MAX`` of them with nothing heard in their place."""
    path = DATA / f"spokenwoz_{call}.flac"
    if not path.exists():
        pytest.skip(f"needs the gathered conversation {path} (data from public repositories is kept in the "
                    "shared folder, not in the project: python -m bench.gather makes it)")
    from bench.meeting import align, decode_offline, normalise, reliable, timed_tokens
    from core.asr.verified import make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(path)[int(excerpt[0] * 16000):int(excerpt[1] * 16000)]
    turns = [line.split("\t") for line in path.with_suffix(".speakers.tsv").read_text().splitlines()[1:]]
    reference = normalise(" ".join(t[3] for t in turns if excerpt[0] <= float(t[0]) < excerpt[1]))
    offline = [timed_tokens(decode_offline(engine, audio)[1])
               for engine in (verified_engine.drafter, verified_engine.verifier)]
    heard = reliable(reference, offline)
    assert len(heard) >= 0.5 * len(reference)  # the check below has words to check
    # live reads differ from run to run: 0.5 s or 0.7 s at a time, or all the audio of a stall (the CPU
    # taken for a while: the next read takes the 12 s since), through the default engine and through
    # tiny.en alone (what the engine check picks on a slow 2-core CPU)
    timings = [("0.5 s", 0.5, True), ("0.7 s", 0.7, True), ("a 12 s stall", 0.5, True), ("a 12 s stall", 0.5, False)]
    for name, chunk_s, verify in timings:
        settings = Settings().with_value("asr.verify_lines", verify)
        engine = verified_engine if verify else verified_engine.drafter
        transcriber = make_transcriber(engine, streaming_options(settings))
        sentences, i = [], 0
        while i < len(audio):
            step = int((12.0 if "stall" in name and i == int(STALL_AT_S * 16000) else chunk_s) * 16000)
            sentences += [s for u in transcriber.push(audio[i:i + step]) for s in u.sentences]
            i += step
        sentences += transcriber.finish().sentences
        words = normalise(" ".join(s.text for s in sentences))
        label = (name, "verified" if verify else "tiny.en alone")
        print(label, " ".join(words))
        assert not _twice(words, reference), (label, _twice(words, reference))
        live = align(reference, words)
        missing = [reference[j] for j in sorted(heard) if live.ops[j] != "C"]
        lost = [reference[j] for j in sorted(heard) if live.ops[j] == "D"]
        assert len(missing) <= (MISSING_MAX if verify else MISSING_MAX_ALONE), (label, missing)
        assert len(lost) <= LOST_MAX, (label, lost)


def test_a_sentence_the_verifier_hears_going_on_is_committed_with_the_next_line(verified_engine):
    """With ``asr.verify_whole_sentences``: tiny.en ends a sentence at a speaker's pause ("Okay, there will be
    two people." … "at seven p.m. on Sunday evening."); where base's decode of the line goes on (no . ? ! at
    its end) the line is verified again together with the next one, so no line is committed cut where the
    drafter alone ended it. Each joined line is still a run of base's greedy words for the audio and prompt
    it decoded."""
    path = DATA / "spokenwoz_SNG0480.flac"
    if not path.exists():
        pytest.skip(f"needs the gathered conversation {path} (python -m bench.gather makes it)")
    from core.asr.verified import VerifyOptions, kept_words, make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings
    from core.text import ends_sentence

    audio = decode_file(path)[int(15.0 * 16000):int(60.0 * 16000)]
    settings = Settings().with_value("asr.verify_whole_sentences", True)
    transcriber = make_transcriber(verified_engine, streaming_options(settings),
                                   VerifyOptions(join_unfinished=settings.asr.verify_whole_sentences))
    for i in range(0, len(audio), 8000):
        transcriber.push(audio[i:i + 8000])
    # the lines committed before the end of the stream (at the end a held line is committed as it is)
    records = [r for r in transcriber.lines if not r.fallback]
    cut = [(r.drafted, r.sentence.text) for r in records
           if ends_sentence(r.drafted) and not ends_sentence(r.sentence.text) and not r.merged]
    assert not cut, cut
    joined = [r for r in records if r.merged]
    # the excerpt has lines to join (with the setting off, 3 lines here are committed cut: the check above fails)
    assert joined, [(r.drafted, r.sentence.text) for r in records]
    for r in joined:
        first, last = r.kept
        assert r.sentence.text == "".join(w.text for w in kept_words(r)).strip()
        assert all(first <= k < last for k in r.left_out)  # a squashed copy inside the run, left out
        clip = audio[int(round(r.start * 16000)):int(round(r.end * 16000))]
        again = verified_engine.verifier.transcribe(clip, r.prompt, "en")
        assert [w.text for w in again.words] == [w.text for w in r.words], r

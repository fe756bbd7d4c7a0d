"""Real conversation through the default engine (tiny.en streaming, base verifying each line).

A telephone call between two people (SpokenWOZ, in the shared folder's ``gathered/conversation``;
source and licence in its README) streamed with different chunk timings, as live reads differ
from run to run: no stretch is committed twice, whatever the timing. On such audio Whisper, at the
end of a window, says the window's text again with its word times squashed into an instant; taken
as the next line, that commits a sentence a second time (issue #48)."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import ROOT

from core.captions.metrics import normalize_english

pytestmark = pytest.mark.slow

CALL = ROOT.parent / "shared" / "data" / "gathered" / "conversation" / "spokenwoz_SNG1640.flac"
EXCERPT = (35.0, 80.0)  # seconds of the call: short turns, backchannels, the repeats seen live
REPEAT_N = 4  # a run of this many words said once and committed twice


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


def test_no_stretch_of_a_real_call_is_committed_twice_whatever_the_chunk_timing(verified_engine):
    if not CALL.exists():
        pytest.skip(f"needs the gathered conversation {CALL} (data from public repositories is kept in the "
                    "shared folder, not in the project)")
    from core.asr.verified import make_transcriber
    from core.audio import decode_file
    from core.session.engines import streaming_options
    from core.settings import Settings

    audio = decode_file(CALL)[int(EXCERPT[0] * 16000):int(EXCERPT[1] * 16000)]
    turns = [line.split("\t") for line in CALL.with_suffix(".speakers.tsv").read_text().splitlines()[1:]]
    reference = normalize_english(" ".join(t[3] for t in turns if EXCERPT[0] <= float(t[0]) < EXCERPT[1])).split()
    texts = []
    for chunk_s in (0.5, 0.7):
        transcriber = make_transcriber(verified_engine, streaming_options(Settings()))
        step = int(chunk_s * 16000)
        sentences = []
        for i in range(0, len(audio), step):
            sentences += [s for u in transcriber.push(audio[i:i + step]) for s in u.sentences]
        sentences += transcriber.finish().sentences
        words = normalize_english(" ".join(s.text for s in sentences)).split()
        print(chunk_s, " ".join(words))
        assert len(words) >= 0.7 * len(reference), (chunk_s, words)
        assert not _twice(words, reference), (chunk_s, _twice(words, reference))
        texts.append(words)

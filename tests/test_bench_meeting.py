"""The pure parts of `sotto bench meeting`: the alignment's error parts, the loss attribution and
the detection of stretches committed twice, on hand-made transcripts (no models)."""

from __future__ import annotations

from bench.meeting import LiveTrace, TimedToken, align, classify_losses, collapsed, repeated_stretches, score


def _timed(words: list[str], step: float = 0.5) -> list[TimedToken]:
    return [TimedToken(w, i * step, i * step + 0.4) for i, w in enumerate(words)]


def test_alignment_counts_substitutions_deletions_and_insertions_apart():
    ref = "we could meet on monday at ten".split()
    hyp = "we could meat on monday uh at ten then".split()
    a = align(ref, hyp)
    assert a.ops == ["C", "C", "S", "C", "C", "C", "C"]
    assert a.counts == {"sub": 1, "del": 0, "ins": 2}
    assert score(ref, "we meet on monday".split()) == {"ref_words": 7, "words_out": 4, "sub": 0, "del": 3,
                                                       "ins": 0, "wer": round(3 / 7, 4)}


def test_each_lost_word_is_put_down_to_where_it_went():
    ref = "so who wants to start yeah i can go first then we look at the budget okay".split()
    times = _timed(ref)  # word i at i * 0.5 s
    offline = [times, times[:12] + [TimedToken("lock", 6.0, 6.4)] + times[13:]]  # "look" misheard by one decode
    trace = LiveTrace(
        # committed: "wants" substituted; "yeah i", "then we", "look" and "budget okay" missing
        committed="so who once to start can go first at the".split(),
        drafter_lines=[("so who wants to start".split(), False),  # verified: the verifier misheard "wants"
                       ("yeah i".split(), True),                  # dropped by the verifier
                       ("can go first".split(), False),
                       ("look at the".split(), False)],           # the drafter never committed "then we"
        speech=[(0.0, 7.0)],                                      # "budget okay" (7.0 s on) is VAD silence
        decoded=[TimedToken("then", 5.05, 5.4)],                  # a drafter decode had "then", none "we"
    )
    losses = {x.word: (x.kind, x.live) for x in classify_losses(ref, offline, trace)}
    assert losses == {"wants": ("verifier_cut", "S"), "yeah": ("dropped_line", "D"), "i": ("dropped_line", "D"),
                      "then": ("never_committed", "D"), "we": ("other", "D"),
                      "budget": ("vad_silence", "D"), "okay": ("vad_silence", "D")}
    # "look" is missing too, but one offline decode missed it: not reliably heard, not counted


def test_a_stretch_committed_twice_is_found_and_a_repeat_the_speaker_made_is_not():
    ref = "did you have you made another browser is there something that no no no no".split()
    committed = ("did you have you made another embrazer is there something that did you have you made it "
                 "another embrowser no no no no").split()
    assert repeated_stretches(committed, ref) == ["did you have you made"]
    spoken_twice = "i think i think we should go i think i think".split()  # said twice in the reference too
    assert repeated_stretches(spoken_twice, spoken_twice) == []
    one_word_more = "some more words words words words words and that".split()  # an insertion, not a stretch
    assert repeated_stretches(one_word_more, "some more words words words words and that".split()) == []


def test_a_phrase_stamped_at_one_time_is_collapsed():
    said = _timed("can i also give the address".split())
    looped = said + [TimedToken(w, 3.1, 3.1) for w in "okay one more".split()]
    assert not collapsed(said) and collapsed(looped) and not collapsed(looped[:-1])


def test_a_repeat_with_audio_of_its_own_was_said_twice_and_one_without_was_committed_twice():
    # a caller's number read back: the reference writes it once ("0 4 8 2 … 3703180482"), but the second
    # saying has a line and audio of its own
    ref = "and 0 4 8 2 3703180482 i already marked it down".split()
    lines = [("and 0 4 8 2", 10.0, 12.0), ("0 4 8 2", 12.5, 14.0), ("i already marked it down", 14.5, 16.0)]
    tokens = [(t, s, e) for text, s, e in lines for t in text.split()]
    words, spans = [t for t, _s, _e in tokens], [(s, e) for _t, s, e in tokens]
    assert repeated_stretches(words, ref) == ["0 4 8 2"]  # by text alone it looks committed twice
    assert repeated_stretches(words, ref, spans=spans) == []
    # the same words in a line overlapping the first (the same audio committed again) ...
    overlapping = [(s - 2.0, e - 1.5) if 5 <= k < 9 else (s, e) for k, (s, e) in enumerate(spans)]
    assert repeated_stretches(words, ref, spans=overlapping) == ["0 4 8 2"]
    # ... or squashed into an instant (Whisper saying its window again) are committed twice
    squashed = [(14.2, 14.25) if 5 <= k < 9 else (s, e) for k, (s, e) in enumerate(spans)]
    assert repeated_stretches(words, ref, spans=squashed) == ["0 4 8 2"]

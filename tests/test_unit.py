"""Fast unit tests of the pure parts: ring buffer, audio window, metrics, masks, subtitles, agreement."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from core.asr.agreement import HypothesisBuffer
from core.audio.ringbuffer import RingBuffer
from core.audio.window import AudioWindow
from core.captions import mask_tokens, normalize_english, normalized_erasure, to_srt, to_vtt, word_error_rate
from core.captions.metrics import ErasureMeter
from core.stream import Word
from core.text import tokenize


def test_ringbuffer_fifo_and_wraparound():
    rb = RingBuffer(10)
    rb.write(np.arange(6))
    assert rb.read(4).tolist() == [0, 1, 2, 3]
    rb.write(np.arange(6, 14))  # wraps around the end
    assert len(rb) == 10
    assert rb.read().tolist() == list(range(4, 14))
    assert rb.overflows == 0


def test_ringbuffer_overflow_keeps_newest_and_counts():
    rb = RingBuffer(5)
    rb.write(np.arange(4))
    rb.write(np.arange(4, 8))
    assert rb.read().tolist() == [3, 4, 5, 6, 7]
    assert rb.overflows == 1 and rb.dropped_samples == 3
    rb.write(np.arange(20))
    assert rb.read().tolist() == [15, 16, 17, 18, 19]


def test_ringbuffer_wait_read_wakes_on_write_and_close():
    rb = RingBuffer(100)
    got = []
    t = threading.Thread(target=lambda: got.append(rb.wait_read(10, timeout=5)))
    t.start()
    rb.write(np.ones(4))
    rb.write(np.ones(8))
    t.join(5)
    assert got and got[0].size == 12
    assert rb.wait_read(1, timeout=0.01) is None
    rb.close()
    assert rb.wait_read(1, timeout=5).size == 0


def test_audio_window_append_trim():
    w = AudioWindow(2.0)
    w.append(np.arange(16000, dtype=np.float32))
    w.append(np.arange(8000, dtype=np.float32))
    assert w.seconds == pytest.approx(1.5)
    w.trim_to(0.5)
    assert w.offset == pytest.approx(0.5)
    assert w.view()[0] == 8000
    assert w.end_time == pytest.approx(1.5)
    with pytest.raises(ValueError):
        w.append(np.zeros(40000, dtype=np.float32))


def test_normalized_erasure_hand_checked():
    # outputs: "a b" -> "a c d" (erases 1: b) -> "a c d e" (erases 0) ; final length 4 -> NE 0.25
    outs = [["a", "b"], ["a", "c", "d"], ["a", "c", "d", "e"]]
    assert normalized_erasure(outs) == pytest.approx(0.25)
    meter = ErasureMeter()
    for text in ("a b", "a c d", "a c d e"):
        meter.add(text)
    assert meter.value == pytest.approx(0.25)
    # complete rewrite: "x y z" -> "a b" erases 3, final length 2
    assert normalized_erasure([["x", "y", "z"], ["a", "b"]]) == pytest.approx(1.5)
    assert normalized_erasure([]) == 0.0


def test_line_erasure_counts_within_each_line_hand_checked():
    from core.captions.metrics import LineErasureMeter

    # line 0 "a b c" shown, then replaced in place by "A b c" (erases 3 in its own row); the partial
    # line 1 "d e" -> "d e f" erases nothing. One text would count line 1 as erased too (5).
    meter, one = LineErasureMeter(), ErasureMeter()
    for lines in ({0: "a b c", 1: "d e"}, {0: "A b c", 1: "d e f"}, {0: "A b c", 1: "d x"}):
        meter.add(lines)
        one.add(" ".join(lines.values()))
    assert meter.erased == 3 + 2 and meter.final_length == 5 and meter.value == pytest.approx(1.0)
    assert one.erased == 5 + 2
    meter.add({0: "A b c"})  # a row that disappears erases its tokens
    assert meter.erased == 5 + 2


def test_cjk_tokenised_per_character():
    assert tokenize("今天天气很好。", "zh") == ["今", "天", "天", "气", "很", "好", "。"]
    assert tokenize("東京 Tower です", "ja") == ["東", "京", "Tower", "で", "す"]
    assert tokenize("Das ist gut.", "de") == ["Das", "ist", "gut."]


def test_mask_tokens_hides_last_k():
    assert mask_tokens("one two three four five", 3) == ("one two", 3)
    assert mask_tokens("one two", 3) == ("", 2)
    assert mask_tokens("one, two three", 0) == ("one, two three", 0)
    assert mask_tokens("今天天气很好", 2, "zh") == ("今天天气", 2)


def test_wer_and_normaliser():
    ref = normalize_english("And so, my fellow Americans: ask not!")
    assert ref == "and so my fellow americans ask not"
    assert word_error_rate(ref, "and so am i fellow americans ask not") == pytest.approx(2 / 7)
    assert word_error_rate("a b c", "a b c") == 0.0


def test_srt_and_vtt_format():
    cues = [(0.0, 1.5, "Hello."), (61.25, 62.0, "Zwei.")]
    srt = to_srt(cues)
    assert "1\n00:00:00,000 --> 00:00:01,500\nHello.\n" in srt
    assert "2\n00:01:01,250 --> 00:01:02,000\nZwei.\n" in srt
    vtt = to_vtt(cues)
    assert vtt.startswith("WEBVTT") and "00:01:01.250 --> 00:01:02.000" in vtt


def _words(spec):
    return [Word(s, e, t) for s, e, t in spec]


def test_local_agreement_commits_common_prefix_only():
    hb = HypothesisBuffer()
    hb.insert(_words([(0, 0.5, " And"), (0.6, 1.0, " so")]))
    assert hb.flush() == []  # first hypothesis: nothing to agree with
    hb.insert(_words([(0, 0.5, " And"), (0.6, 1.0, " so,"), (1.1, 1.5, " my")]))
    assert [w.text for w in hb.flush()] == [" And", " so,"]  # punctuation does not block agreement
    hb.insert(_words([(0, 0.5, " And"), (0.6, 1.0, " so"), (1.05, 1.4, " my"), (1.5, 2.0, " fellow")]))
    # committed words are not committed twice; "my" now agrees even with a shifted start
    assert [w.text for w in hb.flush()] == [" my"]
    assert [w.text for w in hb.tentative()] == [" fellow"]


def test_local_agreement_forced_commits_keep_the_buffer_consistent():
    hb = HypothesisBuffer()
    hb.insert(_words([(0, 0.5, " And"), (0.6, 1.0, " so")]))
    hb.flush()
    # a pause or a full window: the unconfirmed words are committed as they stand
    assert [w.text for w in hb.force_commit()] == [" And", " so"]
    assert hb.tentative() == [] and hb.last_committed_time == 1.0
    assert hb.force_commit() == []  # nothing left to force
    # the next hypothesis repeats the forced words: they are not committed twice
    hb.insert(_words([(0.6, 1.0, " so"), (1.1, 1.5, " my")]))
    assert [w.text for w in hb.flush()] == []
    assert [w.text for w in hb.tentative()] == [" my"]
    # the end of the stream: the last hypothesis is committed whole, after what was committed
    final = hb.commit_final(_words([(0, 0.5, " And"), (0.6, 1.0, " so"), (1.1, 1.5, " my"), (1.6, 2.0, " friends")]))
    assert [w.text for w in final] == [" my", " friends"]
    assert hb.tentative() == [] and hb.last_committed_time == 2.0
    hb.pop_committed(1.05)
    assert [w.text for w in hb.committed_in_buffer] == [" my", " friends"]


def test_repetition_span_detects_loops_only():
    from core.translate.loops import repetition_span

    assert repetition_span([1, 2, 3, 4, 5, 6]) == 0
    assert repetition_span([9, 1, 2, 1, 2, 1, 2]) == 2
    assert repetition_span([7, 5, 6, 7, 5, 6, 7, 5, 6, 7]) == 3
    assert repetition_span([1, 1, 1]) == 0  # "…" or "!!!" is not a loop
    assert repetition_span([4, 1, 1, 1, 1, 1, 1]) == 1


def test_a_word_three_times_is_a_loop_and_punctuation_or_digits_are_not():
    from core.translate.loops import repeated_word

    assert repeated_word(["und", "so", "so", "so"])
    assert not repeated_word(["so", "so"]) and not repeated_word(["so", "so", "es"])
    assert not repeated_word(["", "", ""])  # "!!!", "...", the digits of "1000": word_of gives ""


def test_caption_policy_masks_partial_lines_only():
    from core.captions import CaptionPolicy
    from core.stream import FrozenTranslation, Sentence, TranscriptUpdate, TranslationUpdate

    def asr(sentences, committed, tentative, final=False):
        return TranscriptUpdate(sentences, committed, tentative, 1.0, 1.0, final=final)

    for translation_k, shown in ((None, "eins zwei"), (0, "eins zwei drei vier fünf")):
        policy = CaptionPolicy(3, "en", "de", translation_mask_k=translation_k)
        view = policy.on_transcript(asr([], "and so", " my fellow americans ask not"))
        assert view.partial.shown_source == "and so my fellow"  # committed words are never hidden
        view = policy.on_translation(TranslationUpdate([], "and so my", "eins zwei drei vier fünf", 1.0))
        assert view.partial.shown_translation == shown
        s = Sentence(0, "And so my fellow Americans ask not.", 0.0, 1.0)
        policy.on_transcript(asr([s], "", ""))
        view = policy.on_translation(TranslationUpdate([FrozenTranslation(s, "Und so.")], "", "", 2.0))
        assert view.lines[0].translation == "Und so." and view.partial.shown_translation == ""
        assert policy.view(final=True).partial.hidden_tokens == 0


def test_an_unfinished_translation_is_shown_up_to_its_first_untranslated_run():
    """Three words in a row that the source says too (any case) are a stretch left untranslated: the
    display hides it and what follows, as well as mask-k; names of fewer words stay."""
    from core.captions.policy import shown_translation, untranslated_start

    source = "A Welsh Conservative said his group was open minded"
    translated = "Ein walisischer Konservativer sagte"
    assert untranslated_start(translated, source) == len(translated)
    text = "Ein Welsh Conservative sagte, his group was open"
    assert untranslated_start(text, source) == text.index("his")
    assert shown_translation(text, source, 3) == "Ein Welsh Conservative sagte,"
    assert shown_translation(text, source, 3, run=0) == "Ein Welsh Conservative sagte, his"  # mask-3 alone
    assert shown_translation("die Gruppe sei offen HIS GROUP WAS", source, 1) == "die Gruppe sei offen"
    assert shown_translation("Die Gruppe sei aufgeschlossen", source, 0) == "Die Gruppe sei aufgeschlossen"
    japanese = "彼のグループは open minded だった"
    assert shown_translation(japanese, source, 0, "ja") == japanese


@pytest.mark.parametrize("source, translation", [
    ("The New York Times reported that the talks had failed", "Die New York Times berichtete, dass die Gespräche"),
    ("New York Times reporters said so", "Reporter der New York Times sagten"),
    ("The company paid $1,500,000 for the site", "Das Unternehmen zahlte 1.500.000 Dollar für das Gelände"),
    ("He moved to New South Wales last year", "Er zog letztes Jahr nach New South Wales"),
    ("The train leaves at 10:30:00 sharp", "Der Zug fährt um 10:30:00 Uhr ab"),
    ("Call os.path.join to build the path", "Rufe os.path.join auf, um den Pfad zu bauen"),
    ("See https://example.com/docs/start for details", "Siehe https://example.com/docs/start für Details"),
    ("Write to anna.berg@example.org today", "Schreib heute an anna.berg@example.org"),
    ("It opened on 15/03/2024 in Berlin", "Es wurde am 15/03/2024 in Berlin eröffnet"),
    ("The parcel weighs 1.5 kg in all", "Das Paket wiegt insgesamt 1,5 kg"),
])
def test_names_numbers_dates_urls_and_code_kept_in_a_translation_stay_shown(source, translation):
    """What a correct translation keeps as it is (a name, a number in any format, a time, a date, a
    URL, an e-mail address, code) is not a stretch left untranslated, however many words ``\\w+``
    would split it into: the whole partial translation stays on screen."""
    from core.captions.policy import shown_translation, untranslated_start

    assert untranslated_start(translation, source) == len(translation)
    assert shown_translation(translation, source, 0, "de") == translation


def test_a_copied_stretch_of_ordinary_words_is_still_hidden_next_to_names_and_numbers():
    from core.captions.policy import shown_translation

    source = "We were in New York at 10:30 and then we went home"
    assert shown_translation("Wir waren um 10:30 in New York and then we went", source, 0) == \
        "Wir waren um 10:30 in New York"
    assert shown_translation("und dann and then we went", "and then we went to the market", 0) == "und dann"
    # a name at the source's start is told by the translation's capital; a word the source has in lower
    # case is never a name, in capitals or not
    assert shown_translation("Reporter der New York Times sagten it was fine", "New York Times reporters said "
                             "it was fine", 0) == "Reporter der New York Times sagten"
    assert shown_translation("Sie sagte, THE GROUP WAS", "She said the group was happy", 0) == "Sie sagte,"


def test_caption_policy_hides_an_untranslated_run_until_the_sentence_is_translated():
    from core.captions import CaptionPolicy
    from core.stream import FrozenTranslation, Sentence, TranscriptUpdate, TranslationUpdate

    policy = CaptionPolicy(3, "en", "de")
    policy.on_transcript(TranscriptUpdate([], "Plaid said the group as a whole", "", 1.0, 1.0))
    view = policy.on_translation(TranslationUpdate([], "Plaid said the group as a whole",
                                                   "Plaid sagte, the group as a whole war", 1.0))
    assert view.partial.shown_translation == "Plaid sagte,"
    s = Sentence(0, "Plaid said the group as a whole was not happy.", 0.0, 2.0)
    view = policy.on_transcript(TranscriptUpdate([s], "", "", 2.0, 2.0))
    assert view.lines[0].provisional == "Plaid sagte,"  # kept with its line as shown, until the final one
    view = policy.on_translation(TranslationUpdate([FrozenTranslation(s, "Plaid sagte, the group war unglücklich.")],
                                                   "", "", 2.5))
    assert view.lines[0].translation == "Plaid sagte, the group war unglücklich."  # a finished one is shown whole
    policy.on_transcript(TranscriptUpdate([], "and", " it was said", 3.0, 1.0))
    policy.on_translation(TranslationUpdate([], "and it was said", "und it was said", 3.0))
    assert policy.view(final=True).partial.shown_translation == "und it was said"  # nothing hidden at the end


def test_the_translation_benchmark_measures_what_the_caption_policy_shows():
    """`sotto bench translate`'s NE shown is the app's display: the same rules give the same NE as
    the caption policy's meter fed the same updates (and the untranslated run changes it here)."""
    from bench.translate import Config, Run, display
    from core.captions import CaptionPolicy
    from core.stream import FrozenTranslation, Sentence, TranscriptUpdate, TranslationUpdate

    full = "Plaid said the group as a whole was not happy."
    updates = [("Plaid said the", "Plaid sagte die Gruppe"),
               ("Plaid said the group as a whole", "Plaid sagte, the group as a whole war"),
               (full, "Plaid sagte, die Gruppe sei unzufrieden.")]
    run = Run(Config("x", None), updates=[updates])
    seen = {}
    for copy_run in (0, 3):
        policy = CaptionPolicy(3, "en", "de", copy_run=copy_run)
        for source, text in updates[:-1]:
            policy.on_translation(TranslationUpdate([], source, text, 1.0))
        s = Sentence(0, full, 0.0, 2.0)
        policy.on_transcript(TranscriptUpdate([s], "", "", 2.0, 2.0))
        policy.on_translation(TranslationUpdate([FrozenTranslation(s, updates[-1][1])], "", "", 2.0))
        seen[copy_run] = display(run, "de", 3, copy_run)
        assert seen[copy_run]["ne_display"] == round(policy.translation_display.value, 3)
    assert seen[0]["ne_display"] > seen[3]["ne_display"] == 0.0  # "the group as" was shown, then erased
    assert seen[0]["shown_share"] > seen[3]["shown_share"]


def test_caption_policy_shows_a_spoken_word_once_speech_is_heard_after_it():
    """source_mask "heard": a tentative word is shown once source_hold_s of audio follows it, as a
    prefix (never a word before the words it follows); "words" is mask-k; a final update shows all."""
    from core.captions import CaptionPolicy
    from core.stream import TranscriptUpdate, Word

    words = (Word(1.0, 1.3, " open"), Word(1.3, 1.5, " the"), Word(1.9, 2.2, " quarterly"),
             Word(2.2, 2.6, " report."))

    def asr(audio_time, tentative=words, final=False):
        return TranscriptUpdate([], "please", "".join(w.text for w in tentative), audio_time, 3.0,
                                final=final, tentative_words=tentative)

    policy = CaptionPolicy(3, "en")
    assert policy.source_mask == "heard" and policy.source_hold_s == 0.3
    view = policy.on_transcript(asr(2.0))  # "open" and "the" heard 0.7 and 0.5 s ago, "quarterly" not yet
    assert view.partial.shown_source == "please open the" and view.partial.hidden_tokens == 2
    assert policy.on_transcript(asr(2.5)).partial.shown_source == "please open the quarterly"
    view = policy.on_transcript(asr(2.9))
    assert view.partial.shown_source == "please open the quarterly report." and view.partial.hidden_tokens == 0
    # a prefix: a late word that is heard long ago cannot show while one before it is not yet heard
    odd = (Word(1.0, 2.8, " open"), Word(1.3, 1.5, " the"))
    assert policy.on_transcript(asr(2.9, odd)).partial.shown_source == "please"
    # with nothing committed the line starts at the first shown word
    policy.on_transcript(TranscriptUpdate([], "", "open the", 2.0, 3.0, tentative_words=words[:2]))
    assert policy.view().partial.shown_source == "open the"
    policy.source_hold_s = 1.0
    assert policy.on_transcript(asr(2.0)).partial.shown_source == "please"
    # mask-k on the source instead: the last three words hidden whatever was heard after them
    policy = CaptionPolicy(3, "en", source_mask="words")
    assert policy.on_transcript(asr(9.0)).partial.shown_source == "please open"
    assert policy.on_transcript(asr(9.0, final=True)).partial.shown_source == "please open the quarterly report."


def test_caption_policy_shows_the_whole_line_while_the_speaker_pauses():
    from core.captions import CaptionPolicy
    from core.stream import TranscriptUpdate

    def asr(tentative, paused):
        return TranscriptUpdate([], "please", tentative, 1.0, 1.0, paused=paused)

    for show_at_pause, during_pause in ((True, "please open the quarterly report."), (False, "please open")):
        policy = CaptionPolicy(3, "en", "de", show_at_pause=show_at_pause)
        assert policy.on_transcript(asr(" open the quarterly report.", False)).partial.shown_source == "please open"
        view = policy.on_transcript(asr(" open the quarterly report.", True))
        assert view.partial.shown_source == during_pause
        assert policy.view().partial.shown_source == during_pause  # a translation update keeps it
        # speech goes on: the mask is back on the unconfirmed tail
        view = policy.on_transcript(asr(" open the quarterly report. We will go", False))
        assert view.partial.shown_source == "please open the quarterly report."


def test_a_shown_word_is_contradicted_from_where_the_final_translation_leaves_it():
    """`sotto bench translate`'s contradicted partial translations: the shown words past their common
    start with the sentence's final translation (case and edge punctuation aside), counted per shown
    partial translation and per shown word with the app's display rules."""
    from bench.translate import Config, Run, contradicted, display

    assert contradicted("Er sagte", "Er sagte, dass er kommt.", "de") == 0  # the final only adds a comma
    assert contradicted("die Gruppe", "Die Gruppe sei unzufrieden.", "de") == 0
    assert contradicted("Er sagte die Gruppe", "Er sagte, dass die Gruppe kommt.", "de") == 2  # "dass" inserted
    assert contradicted("Die Gruppe war", "Die Gruppe sei unzufrieden.", "de") == 1
    assert contradicted("a b c d", "a b", "de") == 2  # the final is shorter than what was shown
    assert contradicted("", "a b", "de") == 0
    assert contradicted("我们明天", "我们今天见", "zh") == 2  # characters, as NE counts them
    full = "Plaid said the group as a whole was not happy."
    updates = [("Plaid said the", "Plaid sagte die Gruppe"),
               ("Plaid said the group as a whole", "Plaid sagte, the group as a whole war"),
               (full, "Plaid sagte, die Gruppe sei unzufrieden.")]
    run = Run(Config("x", None), updates=[updates])
    everything = display(run, "de", 0, 0)  # all shown: the second partial is wrong from "the" on (6 of 8 words)
    assert everything["shown_partials"] == 2 and everything["contradicted_partials"] == 0.5
    assert everything["contradicted_words"] == round(6 / 12, 3)
    masked = display(run, "de", 3, 0)  # "Plaid" and "Plaid sagte, the group as" shown
    assert masked["contradicted_partials"] == 0.5 and masked["contradicted_words"] == round(3 / 6, 3)
    assert display(run, "de", 3, 3)["contradicted_partials"] == 0.0  # the untranslated run is never shown


def test_a_beta_verifies_below_one_half():
    """The β table's "verifies": β = 0 is greedy, 0 < β < 0.5 checks every draft token, from 0.5 the
    draft is kept unchecked (unless a floor makes the model's own probability count)."""
    from bench.translate import verifies
    from core.translate.decoding import keeps_draft_unchecked

    assert [verifies(b) for b in (0.0, 0.1, 0.3, 0.49, 0.5, 1.0)] == ["exact", "yes", "yes", "yes", "no", "no"]
    assert verifies(0.5, floor=0.1) == "yes"
    assert not keeps_draft_unchecked(None) and keeps_draft_unchecked(0.5) and not keeps_draft_unchecked(0.3)

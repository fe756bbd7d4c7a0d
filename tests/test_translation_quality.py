"""What users read: the shared recordings captioned and translated end to end (default settings,
bundled models, SSBD), and every frozen translation scanned for the two failures seen in the
bundled model's output: invented numbering ("1." turned into "2.", a list continued), a few-shot
example given back instead of a translation, and phrase loops ("was sie waren, was sie waren")."""

from __future__ import annotations

import dataclasses
import re

import pytest

from core.audio import FileSource
from core.session.pipeline import CaptionPipeline
from core.settings import Settings
from core.translate.quality import is_copy, is_fragment, phrase_loop

pytestmark = pytest.mark.slow

# a reading with a numbered heading ("1.") and old English, and spontaneous speech (two are enough to
# keep the suite's time; all four below passed when the guards were added)
RECORDINGS = ("asr/librivox_shakespeare_sonnet001.wav", "asr/mfa_cold_corpus.wav")
# also passed: asr/librivox_sense_and_sensibility_01_austen_64kb-0870.wav, asr/librispeech_1089-134686-0000.flac
_NUMBER_WORDS = re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|"
                           r"thousand|first|second|third|fourth|fifth|once|twice)\b", re.I)
_WORD = re.compile(r"\w+")


def invented_number(source: str, translation: str) -> bool:
    """A number in the translation that the source does not have: a digit where the source names no
    number at all, or a figure the source's figures do not include ("1." → "2.")."""
    figures = set(re.findall(r"\d+", translation))
    if not figures:
        return False
    if re.search(r"\d", source):
        return not figures <= set(re.findall(r"\d+", source))
    return not _NUMBER_WORDS.search(source)


def test_the_scan_finds_what_it_looks_for():
    assert invented_number("Sonnet one.", "2.") is False  # "one" is a number: a digit may stand for it
    assert invented_number("I am here.", "2. Ich bin hier.")
    assert invented_number("1.", "2.") and not invented_number("1.", "1.")
    assert phrase_loop("was sie waren, was sie waren") == "was sie waren"
    assert phrase_loop("Er sagte, dass er kommt.") is None
    # the two fragments and a copy seen on the shared reading (issue #27)
    assert is_fragment("more or less closely those of the written character and they followed them very closely.",
                       "mehr oder weniger so weit,", "de")
    assert is_fragment("indeed to look at a transition between Gothic and Roman.", "so,", "de")
    assert not is_fragment("indeed to look at a transition between Gothic and Roman.",
                           "so, dass man einen Übergang zwischen Gothischen und römischen unterscheidet.", "de")
    assert not is_fragment("Thank you.", "Danke.", "de")  # too short to judge
    assert is_copy("within thine own bud, buriest thy content,", "in thine own bud, buriest thy content,")
    assert not is_copy("I would like to thank everyone.", "Ich möchte allen danken.")


class _Frames:
    def __init__(self) -> None:
        self.last = None

    def on_view(self, view) -> None:
        self.last = view

    def on_progress(self, progress) -> None:
        pass

    def on_message(self, level, text) -> None:
        pass


@pytest.mark.parametrize("recording", RECORDINGS)
def test_frozen_translations_have_no_invented_numbering_and_no_loops(recording, shared, tiny_engine, translator_de):
    frames = _Frames()
    CaptionPipeline(Settings(), tiny_engine, translator_de, frames).run(FileSource(shared / recording))
    lines = frames.last.lines
    assert lines and all(line.translation for line in lines)
    pairs = [(line.sentence.text, line.translation) for line in lines]
    print("\n".join(f"{s!r} -> {t!r}" for s, t in pairs))
    from core.translate.prompts import FEW_SHOT

    numbered = [(s, t) for s, t in pairs if invented_number(s, t)]
    echoed = [(s, t) for s, t in pairs if t.strip() in FEW_SHOT["de"]]  # an example instead of a translation
    looping = [(s, t, phrase_loop(t)) for s, t in pairs if phrase_loop(t) and not phrase_loop(s)]
    assert not numbered, numbered
    assert not echoed, echoed
    assert not looping, looping


# Finished sentences of the shared 231 s reading whose frozen translations kept only a fragment: the
# bundled model looped ("so weit, so weit, so weit,") and the translation ended at the loop's cut.
WHOLE = (
    "more or less closely those of the written character and they followed them very closely.",
    "indeed to look at a transition between Gothic and Roman.",
)


@pytest.mark.parametrize("sentence", WHOLE)
def test_a_finished_sentence_is_translated_whole(translator_de, sentence):
    """A loop is cut and greedy decoding goes on from the cut with the token that began it banned
    there, so the frozen translation covers the sentence instead of ending where the model looped."""
    result = translator_de.translate(sentence, final=True)
    print(repr(result.text))
    assert not is_fragment(sentence, result.text, "de"), result.text
    assert not phrase_loop(result.text), result.text


def test_a_phrase_said_twice_is_cut_in_shown_and_frozen_translations(translator_de):
    """Seen on an AVX2 machine: "within thine own bud, buriest thy content," was frozen as "in thine own
    bud, in thine own bud,". A phrase of two or more words repeated back to back is a loop: here the
    loop comes in as a draft that β = 1 accepts whole (as a shown translation's draft would), and
    the translator keeps its first time and goes on from there; with the phrase rule off it stays. The copy
    retry is off in both: the draft is old English, and a retry would hide what the phrase rule does."""
    from core.translate.translator import bias_rules

    source = "within thine own bud, buriest thy content,"
    draft = translator_de.runner.tokenize(" in thine own bud, in thine own bud,")
    saved = translator_de.options
    try:
        translator_de.configure(1.0, bias_scope="paper")
        translator_de.options = dataclasses.replace(translator_de.options, copy_retries=0)
        cut = translator_de.translate(source, draft, final=True)
        translator_de.options = dataclasses.replace(translator_de.options, phrase_loops=False)
        kept = translator_de.translate(source, draft, final=True)
    finally:
        translator_de.options = saved
    print(repr(cut.text), repr(kept.text))
    assert bias_rules("paper")["bias_final"]  # β applied to this finished sentence too
    assert phrase_loop(kept.text) == "in thine own bud", kept.text  # the draft's loop, accepted as it is
    assert cut.text.startswith("in thine own bud,") and not phrase_loop(cut.text), cut.text


def test_a_stuttered_sentence_does_not_loop_one_word(translator_de):
    """Found with int8 speech recognition on mfa_cold_corpus: "so I I'll make different than the..."
    came out as "so so so so". A word three times in a row is now a loop, cut at its first time."""
    from core.translate.loops import repeated_word

    result = translator_de.translate("so I I'll make different than the...")
    words = [w.lower() for w in _WORD.findall(result.text)]
    print(repr(result.text))
    assert not any(repeated_word(words[i:i + 3]) for i in range(len(words))), result.text
    assert not phrase_loop(result.text), result.text


def test_names_and_quotations_kept_as_they_are_do_not_make_a_copy():
    """Names and quotations stay as they are in a translation (issue #49): a German sentence keeping
    them is not left in English; the same sentence left in English still is."""
    source = 'One Labour AM said his group was concerned "it rhymes with Twp and Pwp."'
    # the bundled model's translation (it was counted as left in English)
    assert not is_copy(source, 'Eine Labour AM-Fraktion sagte sein Gruppengesicht "it rhymes with Twp and Pwp."')
    assert is_copy(source, source)
    assert is_copy("Welcome to CSA in Italy.", "Welcome to CSA in Italy.")  # the rest is English
    assert not is_copy("Welcome to CSA in Italy.", "Willkommen bei CSA in Italien.")

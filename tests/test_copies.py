"""A finished sentence left in English is decoded again and comes back translated; what a copy is and
where it begins (core.translate.copies), and that names and numbers stay."""

from __future__ import annotations

import dataclasses

import pytest

from core.translate.copies import copy_start, word_starts
from core.translate.quality import is_copy

# Short, informal sentences the bundled model gave back in English as finished sentences before the
# copy retry (each is a copy with ``copy_retries = 0``, asserted below).
COPIED = ("Cheers, y'all.", "Hold on a second.", "Alright, let's get started.", "Hey, how's it going?",
          "So, um, what do you think?")
# copied before the retry, each with a name or a number that its translation keeps
NAMES_AND_NUMBERS = (("Welcome to CSA in Italy.", ("CSA",)),
                     ("Willoughby set up Truly with Capp in 2016 and Jones, 52, joined as chairman in March.",
                      ("Jones", "52", "2016")))


def test_where_a_copy_begins():
    pieces = [" Okay", ",", " so", " that", "'", "s", " down", ",", " right", "."]
    assert word_starts(pieces) == [0, 2, 3, 6, 8]  # "'s" goes on the word before it
    assert copy_start(pieces, "Okay, so that's down, right.") == 0
    # a name kept at the start is no copy: the copied run begins after it
    assert copy_start([" Tom", " sagte", ":", " hold", " on"], "Tom said: hold on.") == 3
    assert copy_start([" Tom", " ist", " hier", "."], "Tom is here.") is None


def _translate(translator, sentence: str, copy_retries: int | None = None) -> str:
    """``sentence`` as a finished one; ``copy_retries`` 0: as before the copy retry."""
    options = translator.options
    if copy_retries is not None:
        translator.options = dataclasses.replace(options, copy_retries=copy_retries)
    translator.forget()  # clause pieces translated with the other setting are not reused
    try:
        return translator.translate(sentence, final=True).text
    finally:
        translator.options = options


@pytest.mark.parametrize("sentence", COPIED)
def test_a_short_informal_sentence_left_in_english_comes_back_translated(translator_de, sentence):
    before = _translate(translator_de, sentence, copy_retries=0)
    assert is_copy(sentence, before), before  # what the first decode gives (unchanged)
    after = _translate(translator_de, sentence)
    assert after and not is_copy(sentence, after), after
    assert after.strip(" .!?").lower() != sentence.strip(" .!?").lower()


def test_a_name_and_a_number_are_kept(translator_de):
    for sentence, kept in NAMES_AND_NUMBERS:
        before = _translate(translator_de, sentence, copy_retries=0)
        assert is_copy(sentence, before), before
        after = _translate(translator_de, sentence)
        assert not is_copy(sentence, after) and all(k in after for k in kept), (sentence, after)


def test_bench_translate_finished_counts_the_first_decode_and_what_is_shown(translator_de):
    from bench.translate import FINISHED_SETS, bench_finished, finished_markdown

    if not all(src.is_file() for _, split, src, _ in FINISHED_SETS if split != "heldout"):
        pytest.skip("NTREX-128 or the gathered spoken sets (../shared/data/gathered/spoken_mt) are missing")
    rows = bench_finished(translator_de, False, 4, lambda _: None)
    assert [(r["set"], r["output"]) for r in rows] == [
        (name, output) for name, split, _, _ in FINISHED_SETS if split != "heldout"
        for output in ("first decode", "shown")]
    ntrex_first, ntrex_shown = rows[0], rows[1]
    # NTREX's first line ("Welsh AMs worried about 'looking like muppets'") was left in English
    assert ntrex_first["copies"] >= 1 and ntrex_shown["copies"] < ntrex_first["copies"]
    assert ntrex_shown["retried"] >= 1 and all(r["sentences"] == 4 for r in rows)
    table = finished_markdown({"date": "today", "machine": "here", "model": "m", "finished": rows}, "cmd")
    assert table.count("\n| NTREX-128 | news | 4 | ") == 1

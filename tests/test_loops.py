"""The loop rules of core/translate/loops.py on token texts as the bundled model writes them."""

from __future__ import annotations

from core.translate.loops import has_repeated_phrase, holds_phrase_loop, repeated_phrase

# "in thine own bud, in thine own bud," as Gemma's tokenizer splits it (leading spaces kept)
SONNET = [" in", " th", "ine", " own", " bud", ",", " in", " th", "ine", " own", " bud", ","]


def test_a_phrase_twice_is_a_loop_once_its_second_time_is_complete():
    cuts = [repeated_phrase(SONNET[:end]) for end in range(1, len(SONNET) + 1)]
    assert cuts == [0] * 11 + [6]  # the second "in thine own bud," (6 tokens) goes
    assert holds_phrase_loop(SONNET) and not holds_phrase_loop(SONNET[:11])
    # punctuation and case do not hide it ("bud," then "Bud.")
    assert repeated_phrase([" so", " weit", ",", " So", " weit", "."]) == 3


def test_what_is_no_phrase_loop():
    assert repeated_phrase([" sehr", " sehr"]) == 0  # one word twice is often meant ("very very")
    assert repeated_phrase([" ja", ",", " ja"]) == 0
    # other figures: "page 12 of it, page 13 of it"
    assert repeated_phrase([" Seite", " 1", "2", " von", " ihm", ",", " Seite", " 1", "3", " von", " ihm"]) == 0
    # scripts without spaces count as one word: reduplication ("step by step") is no loop
    assert repeated_phrase(["一", "步", "一", "步"]) == 0
    assert repeated_phrase([" a", "b", " a", "b"]) == 0  # one word ("ab ab")


def test_a_source_that_says_a_phrase_twice_lets_its_translation_say_it_twice():
    assert has_repeated_phrase("New York, New York, the city that never sleeps")
    assert not has_repeated_phrase("within thine own bud, buriest thy content,")
    assert has_repeated_phrase("again and again and again")  # "again and" twice: "immer wieder, immer wieder" may stay

"""Long sentences translated clause by clause (core.translate.clauses), with the bundled model:
the pieces, the remembered finished pieces, the draft of the last piece, and β = 0 still greedy."""

from __future__ import annotations

import pytest
from conftest import use_knobs

from bench.translate import Config, prefixes, run_config
from core.translate.clauses import PieceMemo, clause_pieces, sentence_parts

LONG = ("On the matter of the AMs' title, the Commission favoured Welsh Parliament Members or WMPs, "
        "but the MWP option received the most support in a public consultation.")


def test_a_sentence_is_cut_only_where_both_sides_have_four_words():
    assert clause_pieces(LONG) == ["On the matter of the AMs' title,",
                                   "the Commission favoured Welsh Parliament Members or WMPs,",
                                   "but the MWP option received the most support in a public consultation."]
    # a short side joins its neighbour: no lone "he said", no lone number
    assert clause_pieces('"We will not give up," the minister said.') == ['"We will not give up," the minister said.']
    assert clause_pieces("Yes, I think so, really.") == ["Yes, I think so, really."]
    assert clause_pieces("In 2019, 2020, and 2021 the numbers rose again.") == [
        "In 2019, 2020, and 2021 the numbers rose again."]
    # a growing sentence: the cut appears once the part after it has four words
    assert clause_pieces("When the rain stopped, we went") == ["When the rain stopped, we went"]
    assert clause_pieces("When the rain stopped, we went out again") == ["When the rain stopped,", "we went out again"]
    assert clause_pieces("one; two three four five: six") == ["one; two three four five: six"]
    assert clause_pieces("") == [""]


def test_a_line_of_several_sentences_is_cut_at_their_ends_but_not_after_an_abbreviation():
    assert clause_pieces("I booked the hotel for two nights. Can you call a taxi for us?") == [
        "I booked the hotel for two nights.", "Can you call a taxi for us?"]
    # a growing live line keeps the pieces its draft was made of: no sentence cut there
    assert clause_pieces("I booked the hotel for two nights. Can you call a taxi for us?", sentences=False) == [
        "I booked the hotel for two nights. Can you call a taxi for us?"]
    # a short sentence joins its neighbour, as a short clause does
    assert clause_pieces("Yeah. Okay, so let's book the table now.") == ["Yeah. Okay, so let's book the table now."]
    # a bracketed caption ends where its bracket closes
    assert clause_pieces("[What does this mean for all of us?] This week there were stories about the leak.") == [
        "[What does this mean for all of us?]", "This week there were stories about the leak."]
    # nor inside a quotation
    assert clause_pieces('And so you\'re thinking, "Yeah! Give me the statin." And the doctor agrees.') == [
        "And so you're thinking,", '"Yeah! Give me the statin."', "And the doctor agrees."]
    # titles, initials and initialisms end no sentence; nor does a decimal point
    for one in ("Mr. Smith went to Washington with the army today.", "The U.S. Army went to Washington today.",
                "We leave at 2.30 tomorrow morning, said J. Smith.", "Bring apples, pears etc. to the party tonight."):
        assert clause_pieces(one) == [one], one


def test_the_memo_forgets_the_oldest():
    memo = PieceMemo(size=2)
    memo.put(("en", "de", "a"), 1)
    memo.put(("en", "de", "b"), 2)
    assert memo.get(("en", "de", "a")) == 1  # now the newest
    memo.put(("en", "de", "c"), 3)
    assert memo.get(("en", "de", "b")) is None and memo.get(("en", "de", "a")) == 1
    memo.clear()
    assert memo.get(("en", "de", "a")) is None


@pytest.fixture
def tr(translator_de):
    yield translator_de
    translator_de.options.clause_pieces = True
    translator_de.options.sentence_by_sentence = True
    translator_de.options.as_written = True
    translator_de.forget()
    use_knobs(translator_de)


def test_only_finished_text_without_a_draft_is_cut_at_sentence_ends(tr):
    """A file's line goes sentence by sentence; a live line, drafted by its partial translation, keeps
    the pieces that draft was made of (cut anew at commit, the draft no longer fits)."""
    use_knobs(tr)
    first, line = "I booked the hotel for two nights.", "I booked the hotel for two nights. Can you call a taxi for us?"
    key = (tr.options.source_lang, tr.options.target_lang, first)
    tr.forget()
    partial = tr.translate(line[:-12])  # unfinished: no sentence cut
    assert tr._pieces.get(key) is None
    tr.translate(line, partial.tokens, final=True, draft_source=line[:-12])  # committed with its draft: none
    assert tr._pieces.get(key) is None
    tr.forget()
    whole = tr.translate(line, final=True)  # finished, no draft (a file's line): sentence by sentence
    assert whole.text == " ".join(tr.translate(part, final=True).text for part in sentence_parts(line))
    tr.options.sentence_by_sentence = False
    tr.forget()
    tr.translate(line, final=True)  # otherwise the first sentence is a piece of its own
    assert tr._pieces.get(key) is not None


def test_pieces_are_translated_one_by_one_and_joined(tr):
    use_knobs(tr)
    tr.forget()
    whole = tr.translate(LONG)
    pieces = clause_pieces(LONG)
    # each piece alone (one piece: as it is); the finished ones as finished text (a copy is decoded again);
    # a piece inside the sentence is not a sentence of its own, so its first letter stays as it is
    tr.options.as_written = False
    parts = [tr.translate(p, final=i < len(pieces) - 1) for i, p in enumerate(pieces)]
    tr.options.as_written = True
    assert whole.text == " ".join(p.text for p in parts)
    assert whole.tokens == [t for p in parts for t in p.tokens]
    tr.options.clause_pieces = False
    assert tr.translate(LONG).text != whole.text  # the switch turns it off (this model translates them differently)


def test_a_growing_sentence_re_translates_only_its_last_piece(tr):
    use_knobs(tr, beta=0.2, reuse=True)
    tr.forget()
    head = "On the matter of the AMs' title, the Commission favoured Welsh"
    first = tr.translate(head)
    grown = tr.translate(head + " Parliament Members", first.tokens, draft_source=head)
    # the finished piece was remembered from the first call: only the last piece cost anything
    piece = "On the matter of the AMs' title,"
    assert clause_pieces(head)[0] == piece
    alone = use_knobs(tr).translate(piece)
    assert grown.tokens[: len(alone.tokens)] == alone.tokens
    assert grown.text.startswith(alone.text)
    # the last piece got the rest of the previous translation as its draft
    assert grown.draft_tokens == len(first.tokens) - len(alone.tokens) > 0
    assert grown.accepted_tokens > 0
    tr.forget()
    fresh = use_knobs(tr, beta=0.2, reuse=True).translate(head + " Parliament Members", first.tokens, draft_source=head)
    assert fresh.tokens == grown.tokens and fresh.evaluated_tokens > grown.evaluated_tokens


def test_beta_zero_is_greedy_with_pieces(tr, ntrex):
    sources = [s for s in ntrex[:40] if len(clause_pieces(s)) > 1][:2]
    assert len(sources) == 2
    ar = run_config(tr, Config("ar", None, reuse=True), sources, "de")
    for cfg in (Config("ssbd0", 0.0), Config("ssbd0+kv", 0.0, reuse=True)):
        other = run_config(tr, cfg, sources, "de")
        diverging = [(i, a, b) for i, (a, b) in enumerate(zip(ar.outputs, other.outputs, strict=True)) if a != b]
        for i, a, b in diverging:
            print(f"{cfg.name}: update {i} differs: {a} vs {b}")
        assert not diverging
        assert other.finals == ar.finals
    assert sum(len(prefixes(s)) for s in sources) == len(ar.outputs)

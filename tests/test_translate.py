"""Translation with the real bundled Gemma 3 270M."""

from __future__ import annotations

import re

import pytest

from core.errors import TranslationError
from core.stream import Sentence
from core.translate import LlamaTranslator, StreamingTranslator, TranslatorOptions

JFK = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
GERMAN = {"und", "sie", "nicht", "was", "ihr", "ihre", "ihrem", "ihren", "für", "können", "kann", "land", "tun",
          "mein", "meine", "liebe", "so", "das", "die", "der", "ist", "fragen", "frage", "amerikaner"}
ENGLISH = {"and", "my", "fellow", "ask", "not", "what", "your", "country", "can", "do", "for", "you"}


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def test_jfk_sentence_to_german(translator_de):
    result = translator_de.translate(JFK)
    words = _words(result.text)
    assert result.text and result.tokens
    german = sum(w in GERMAN for w in words)
    english = sum(w in ENGLISH - {"so"} for w in words)
    assert german >= 4 and german > 2 * english, result.text
    assert result.text.lower() != JFK.lower()


@pytest.mark.parametrize("lang,script", [("ja", r"[\u3040-\u30ff\u4e00-\u9fff]"), ("zh", r"[\u4e00-\u9fff]")])
def test_cjk_targets_produce_cjk_text(store, lang, script):
    tr = LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(target_lang=lang))
    try:
        text = tr.translate("The weather is very cold today.").text
    finally:
        tr.close()
    assert len(re.findall(script, text)) >= 3, text


def test_greedy_is_deterministic_and_from_scratch(translator_de):
    a = translator_de.translate("The meeting starts at nine o'clock tomorrow morning.")
    translator_de.translate("Something else entirely, to fill the cache.")
    b = translator_de.translate("The meeting starts at nine o'clock tomorrow morning.")
    assert a.tokens == b.tokens and a.prompt_tokens == b.prompt_tokens
    assert a.evaluated_tokens == a.prompt_tokens + len(a.tokens)  # everything evaluated afresh


def test_empty_source(translator_de):
    result = translator_de.translate("   ")
    assert result.text == "" and result.tokens == []


def test_streaming_translator_freezes_finished_sentences(translator_de):
    st = StreamingTranslator(translator_de)
    u1 = st.translate([], "And so my fellow Americans", 2.0)
    assert u1 is not None and u1.partial_translation and not u1.frozen
    assert st.translate([], "And so my fellow Americans", 2.5) is None  # unchanged: no work
    s = Sentence(0, "And so my fellow Americans, ask not what your country can do for you.", 0.0, 7.5)
    u2 = st.translate([s], "ask what", 8.5)
    assert [f.sentence.index for f in u2.frozen] == [0] and u2.frozen[0].text
    assert u2.partial_source == "ask what"
    assert st.calls == 3


def test_source_longer_than_context_is_split(store, caplog):
    tr = LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(target_lang="de", n_ctx=256))
    try:
        # one sentence with no clause mark: neither a sentence end nor a comma to cut at
        long = " and then ".join(["the committee discussed the budget and the members agreed on the plan"] * 6) + "."
        with caplog.at_level("WARNING", logger="sotto"):
            result = tr.translate(long)
        assert result.text and "exceeds the translation context" in caplog.text
        with pytest.raises(TranslationError, match="too long"):
            tr.translate("ab" * 800)  # one "word" longer than the context cannot be split
    finally:
        tr.close()

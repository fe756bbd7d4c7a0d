"""The instruct-model path (chat template) with a real GGUF built for the tests.

No instruct GGUF is available offline, so the bundled Gemma 3 270M is copied once per
module with Gemma 3's chat template and an instruct name added (``gguf``'s metadata
helper). Its weights are the base model's, so what it writes is no translation; these
tests check the mechanics: the template, the tokens, the stops, and that SSBD and prefix
reuse reproduce plain greedy decoding under a chat prompt.

A base model never writes ``<end_of_turn>`` (its embedding row is untrained), so the
copy gives ``<end_of_turn>`` the embedding row of ``"\\n\\n"``: wherever the model would
end its reply with a blank line, the two logits are equal and the argmax (first index)
is ``<end_of_turn>``, so generation really ends on an end-of-turn token.
"""

from __future__ import annotations

import logging
import re

import gguf
import numpy as np
import pytest
from conftest import use_knobs

from bench.translate import Config, identity, run_config
from core.errors import ModelError
from core.translate import LlamaTranslator, TranslatorOptions
from core.translate.llama_runner import PROMPT_CHUNK, LlamaRunner
from core.translate.prompting import resolve_style

TIE_GAP = 1e-3  # a divergence counts as a floating-point near-tie only below this top-2 logit gap

# Gemma 3's chat template as google/gemma-3-*-it ship it (tokenizer_config.json), written out here.
_GENERATION_PROMPT = """
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\\n'}}
{%- endif -%}
"""
GEMMA3_CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\\n' }}
{%- endfor -%}""" + _GENERATION_PROMPT
NO_GENERATION_PROMPT = GEMMA3_CHAT_TEMPLATE.replace(_GENERATION_PROMPT, "")

EOT_ID, BLANK_LINE_ID = 106, 108  # Gemma 3's "<end_of_turn>" and "\n\n"


def _write_variant(reader, path, template: str, eot_like_blank_line: bool) -> None:
    """Copy the model ``reader`` holds to ``path`` with an instruct name and ``template``."""
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    text = gguf.GGUFValueType.STRING
    keys = gguf.Keys
    metadata = {
        keys.General.NAME: MetadataDetails(text, "Gemma 3 270m It"),  # as the published -it GGUFs name it
        keys.General.FINETUNE: MetadataDetails(text, "it"),
        keys.Tokenizer.CHAT_TEMPLATE: MetadataDetails(text, template),
    }
    tensors = list(reader.tensors)
    if eot_like_blank_line:
        i = next(k for k, t in enumerate(tensors) if t.name == "token_embd.weight")
        rows = np.array(tensors[i].data)  # Q8_0: one row of bytes per token (tied input/output embedding)
        rows[EOT_ID] = rows[BLANK_LINE_ID]
        tensors[i] = tensors[i]._replace(data=rows)
    arch = reader.get_field(keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(path, arch=arch, endianess=reader.endianess)
    original, reader.tensors = reader.tensors, tensors
    try:
        copy_with_new_metadata(reader, writer, metadata, [])
    finally:
        reader.tensors = original


@pytest.fixture(scope="module")
def chat_models(store, tmp_path_factory):
    """Two instruct copies of the bundled model: "it" (the full template) and "no-reply"
    (the template without its generation prompt)."""
    base = store.resolve("gemma-3-270m")
    reader = gguf.GGUFReader(base, "r")
    folder = tmp_path_factory.mktemp("chat-gguf")
    paths = {"it": folder / "gemma-3-270m-it.gguf", "no-reply": folder / "gemma-3-270m-it-no-reply.gguf"}
    _write_variant(reader, paths["it"], GEMMA3_CHAT_TEMPLATE, eot_like_blank_line=True)
    _write_variant(reader, paths["no-reply"], NO_GENERATION_PROMPT, eot_like_blank_line=False)
    del reader
    return paths


@pytest.fixture(scope="module")
def chat(chat_models):
    translator = LlamaTranslator(chat_models["it"], TranslatorOptions(target_lang="de"))  # prompt style "auto"
    yield translator
    translator.close()




def _one_sentence(message: str) -> bool:
    return "\n" not in message and message.endswith(".") and message[0].isupper() and ". " not in message


def test_style_is_chat_for_the_instruct_copy_and_few_shot_for_the_bundled_model(chat, translator_de):
    assert chat.style == "chat" and resolve_style(chat.runner, "auto") == "chat"
    assert chat.runner.metadata["tokenizer.chat_template"] == GEMMA3_CHAT_TEMPLATE
    assert resolve_style(translator_de.runner, "auto") == "few-shot"
    assert "tokenizer.chat_template" not in translator_de.runner.metadata


@pytest.mark.parametrize("lang,name", [("de", "German"), ("ja", "Japanese")])
def test_prompt_renders_the_template_with_the_request_and_the_reply_start(chat, lang, name):
    chat.options.target_lang = lang
    try:
        source = "The weather is nice today."
        text = chat.prompt_text(source)
        assert text == (
            "<bos><start_of_turn>user\n"
            f"Translate the following English text into {name}. Reply with the translation only.\n\n"
            f"{source}<end_of_turn>\n"
            "<start_of_turn>model\n"
        )
        runner = chat.runner
        tokens = chat.prompt_tokens(source)
        assert tokens.count(runner.bos) == 1 and tokens[0] == runner.bos  # the template's BOS, not doubled
        assert tokens.count(105) == 2 and tokens.count(EOT_ID) == 1  # template markers are single special tokens
        tail = runner.tokenize("<start_of_turn>model\n")
        assert tokens[-len(tail):] == tail
        assert tokens[1:] == runner.tokenize(text.removeprefix("<bos>"))
    finally:
        chat.options.target_lang = "de"


def test_stop_tokens(chat):
    runner = chat.runner
    assert runner.tokenize("<end_of_turn>") == [EOT_ID]
    for token in (EOT_ID, runner.eos, 105, runner.bos, BLANK_LINE_ID, runner.tokenize("\n")[0]):
        assert runner.is_stop(token), token  # end of turn, EOS, <start_of_turn>, <bos>, newlines
    for word in ("Das", " Wetter", "."):
        assert not runner.is_stop(runner.tokenize(word)[0]), word


@pytest.mark.parametrize("source", [
    "The weather is nice today.",
    "Where is the train station?",
    "And so my fellow Americans, ask not what your country can do for you.",
])
def test_greedy_generation_ends_at_end_of_turn_with_clean_text(chat, source):
    result = use_knobs(chat).translate(source)
    runner = chat.runner
    # replay the decoding by hand: same tokens, and what came next was the end-of-turn token
    runner.truncate(0)
    logits = runner.eval(chat.prompt_tokens(source), chunk=PROMPT_CHUNK)
    for token in result.tokens:
        assert int(np.argmax(logits)) == token
        logits = runner.eval([token])
    assert int(np.argmax(logits)) == EOT_ID, "generation ended on something other than <end_of_turn>"
    assert logits[EOT_ID] == logits[BLANK_LINE_ID]  # the built model's tie (see the module docstring)
    assert not any(runner.is_stop(t) for t in result.tokens)
    assert result.text and result.text == result.text.strip() and "\n" not in result.text
    assert not re.search(r"<(bos|eos|start_of_turn|end_of_turn|pad)>|<\w+_of_\w+>", result.text), result.text
    assert runner.detokenize(result.tokens).strip() == result.text


def test_a_draft_ends_at_its_first_stop_or_template_token(chat):
    source = "The weather is nice today."
    greedy = use_knobs(chat).translate(source).tokens
    runner = chat.runner
    junk = runner.tokenize("Hallo Welt")
    for stop in ([EOT_ID], [runner.eos], runner.tokenize("<start_of_turn>user\n"), [runner.n_vocab + 5]):
        # β = 1 accepts every draft token it verifies: the stop must end the draft, not join the output
        result = use_knobs(chat, beta=1.0).translate(source, greedy + stop + junk)
        assert result.tokens == greedy and result.draft_tokens == result.accepted_tokens == len(greedy), stop
        assert "user" not in result.text and "Hallo" not in result.text
        exact = use_knobs(chat, beta=0.0).translate(source, greedy + stop + junk)
        assert exact.tokens == greedy and exact.accepted_tokens == len(greedy)
    use_knobs(chat)


def test_beta_zero_and_prefix_reuse_equal_greedy_under_the_chat_template(chat, ntrex):
    sources = ntrex[:3]
    ar = run_config(chat, Config("ar", None), sources, "de")
    assert ar.draft_tokens == 0 and ar.output_tokens > 0
    for cfg in (Config("ssbd0", 0.0), Config("ssbd0+kv", 0.0, reuse=True), Config("ar+kv", None, reuse=True)):
        other = run_config(chat, cfg, sources, "de")
        report = identity(ar, other, TIE_GAP)
        for d in report["divergences"]:
            print(f"{cfg.name}: update {d['update']} diverges at token {d['position']}, top-2 gap {d['top2_gap']}")
        assert all(d["near_tie"] for d in report["divergences"]), (cfg.name, report["divergences"])
        assert report["identical_fraction"] >= 0.9, (cfg.name, report["identical_fraction"])
        if cfg.beta is not None:
            assert other.accepted_tokens > 0  # the drafts were really verified, not just regenerated
        if cfg.reuse:
            assert other.evaluated_tokens < ar.evaluated_tokens  # the prompt prefix was really reused
    use_knobs(chat)


def test_chat_style_without_a_template_is_one_plain_error(store, monkeypatch):
    closed = []
    original_close = LlamaRunner.close
    monkeypatch.setattr(LlamaRunner, "close", lambda self: (closed.append(self), original_close(self)))
    with pytest.raises(ModelError) as info:
        LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(prompt_style="chat"))
    message = str(info.value)
    assert _one_sentence(message) and "chat template" in message, message
    assert len(closed) == 1, "the model loaded for the failed translator was not freed"


def test_template_without_generation_prompt(chat_models, monkeypatch, caplog):
    closed = []
    original_close = LlamaRunner.close
    monkeypatch.setattr(LlamaRunner, "close", lambda self: (closed.append(self), original_close(self)))
    with pytest.raises(ModelError) as info:
        LlamaTranslator(chat_models["no-reply"], TranslatorOptions(prompt_style="chat"))
    message = str(info.value)
    assert _one_sentence(message) and "chat template" in message, message
    assert len(closed) == 1
    # with the prompt style left on "auto" the translator says so in the log and uses the few-shot prompt
    with caplog.at_level(logging.WARNING, logger="sotto"):
        tr = LlamaTranslator(chat_models["no-reply"], TranslatorOptions(target_lang="de"))
    try:
        assert tr.style == "few-shot" and message in caplog.text
        assert tr.prompt_text("Good night.").endswith("[en] Good night.\n[de]")
    finally:
        tr.close()


@pytest.fixture(scope="module")
def translategemma(chat_models):
    """The instruct copy asked as TranslateGemma is: Gemma 3's tokenizer is TranslateGemma's."""
    translator = LlamaTranslator(chat_models["it"], TranslatorOptions(target_lang="de", chat_prompt="translategemma"))
    yield translator
    translator.close()


def test_translategemma_is_asked_in_its_own_prompt_written_whole(translategemma):
    source = "Cheers, y'all."
    text = translategemma.prompt_text(source)
    assert text.startswith("<start_of_turn>user\nYou are a professional English (en) to German (de) translator.")
    assert text.endswith(f"Please translate the following English text into German:\n\n\n{source}<end_of_turn>\n"
                         "<start_of_turn>model\n")
    runner = translategemma.runner
    tokens = translategemma.prompt_tokens(source)
    assert tokens[0] == runner.bos and tokens.count(runner.bos) == 1
    assert tokens.count(105) == 2 and tokens.count(EOT_ID) == 1  # its turn markers are single special tokens
    result = use_knobs(translategemma).translate("The weather is nice today.")
    assert result.text and "<" not in result.text  # it ended at <end_of_turn>: no marker in the text
    translategemma.options.target_lang = "zh"
    try:  # Chinese by its script, as TranslateGemma's template takes the codes
        assert "English (en) to Chinese (zh-Hans) translator" in translategemma.prompt_text(source)
    finally:
        translategemma.options.target_lang = "de"


@pytest.mark.parametrize("chat_prompt, asked", [
    ("hy-mt", "Translate the following text into German. Note that you should only output the translated result "
              "without any additional explanation:\n\nCheers, y'all."),
    ("eurollm", "Translate the following English source text to German:\nEnglish: Cheers, y'all. \nGerman:"),
])
def test_a_catalogue_models_own_wording_reaches_its_chat_template(chat_models, chat_prompt, asked):
    translator = LlamaTranslator(chat_models["it"], TranslatorOptions(target_lang="de", chat_prompt=chat_prompt))
    try:
        text = translator.prompt_text("Cheers, y'all.")
        # the template (here Gemma 3's) renders the model's own request and starts the reply
        assert asked in text and text.endswith("<start_of_turn>model\n"), text
        assert "Reply with the translation only" not in text
    finally:
        translator.close()

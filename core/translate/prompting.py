"""Prompts for the translation model: the few-shot prompt of a base model or the chat template of
an instruct model, checked once when the model loads."""

from __future__ import annotations

import re

from .. import logger
from ..errors import ModelError
from .llama_runner import LlamaRunner
from .prompts import chat_messages, few_shot_prompt, raw_chat_prompt


def resolve_style(runner: LlamaRunner, style: str) -> str:
    """``auto``: ``chat`` for an instruct model with a chat template (by its metadata), else ``few-shot``."""
    if style != "auto":
        return style
    meta = {k: str(v).lower() for k, v in runner.metadata.items()}
    name = " ".join(meta.get(k, "") for k in ("general.name", "general.finetune", "general.basename"))
    if "tokenizer.chat_template" in meta and re.search(r"\b(it|instruct|chat)\b|-it\b|instruct", name):
        return "chat"
    return "few-shot"


class Prompter:
    """Writes the prompt for a source text in the model's prompt style (``few-shot`` or ``chat``);
    ``chat_prompt``: the wording a chat asks in (:data:`~core.translate.prompts.CHAT_PROMPTS`)."""

    def __init__(self, runner: LlamaRunner, style: str, source_lang: str, target_lang: str,
                 chat_prompt: str = "generic") -> None:
        self.runner = runner
        self.style = resolve_style(runner, style)
        self.chat_prompt = chat_prompt
        self._chat_formatter = None
        if self.style == "chat" and raw_chat_prompt("", source_lang, target_lang, chat_prompt) is None:
            try:
                self._chat_formatter = self._make_chat_formatter(source_lang, target_lang)
            except ModelError as exc:
                if style == "chat":  # asked for explicitly: say why it cannot be
                    raise
                logger.warning("%s Using the few-shot prompt instead.", exc)
                self.style = "few-shot"

    def _make_chat_formatter(self, source_lang: str, target_lang: str):
        """The model's chat template, checked once: it must render a translation request and
        end it with the start of the model's reply (the generation prompt)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.runner.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError("This translation model has no chat template; set the prompt style to few-shot.")
        eos, bos = self.runner.special_token_texts()
        probe = chat_messages("Good morning.", source_lang, target_lang, self.chat_prompt)
        try:
            formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
            asking = formatter(messages=probe).prompt
            told = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                       add_generation_prompt=False)(messages=probe).prompt
        except Exception as exc:  # a template is a program: syntax errors, raise_exception(), missing keys
            logger.exception("the chat template of %s failed", self.runner.path.name)
            raise ModelError(
                "This translation model's chat template could not be used; set the prompt style to few-shot."
            ) from exc
        if asking == told:
            raise ModelError(
                "This translation model's chat template does not start the model's reply; "
                "set the prompt style to few-shot."
            )
        return formatter

    def text(self, source: str, source_lang: str, target_lang: str, leave_out: int | None = None) -> str:
        """The full prompt for ``source`` (the translation is generated after it); ``leave_out``: a
        few-shot example to leave out."""
        if self.style == "chat":
            raw = raw_chat_prompt(source, source_lang, target_lang, self.chat_prompt)
            if raw is not None:
                return raw
            assert self._chat_formatter is not None
            return self._chat_formatter(messages=chat_messages(source, source_lang, target_lang,
                                                               self.chat_prompt)).prompt
        return few_shot_prompt(source, source_lang, target_lang, leave_out)

    def tokens(self, text: str) -> list[int]:
        """Tokens of a prompt ``text``, with one BOS (chat templates often add BOS themselves)."""
        tokens = self.runner.tokenize(text, add_bos=True)
        bos = self.runner.bos
        if len(tokens) > 1 and tokens[0] == bos and tokens[1] == bos:
            tokens = tokens[1:]
        return tokens

"""Greedy autoregressive translation with a local GGUF model (the baseline engine).

Every call translates from scratch: the KV cache is cleared, the prompt is
evaluated, and tokens are generated greedily until a newline or end of turn.
This is the reference every faster engine (SSBD) is measured against.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import logger
from ..compute import COMPUTE_GATE
from ..errors import ModelError, TranslationError
from .llama_runner import LlamaRunner
from .prompts import chat_messages, few_shot_prompt


@dataclass
class TranslatorOptions:
    """How the translator prompts and runs its model."""

    source_lang: str = "en"
    target_lang: str = "de"
    prompt_style: str = "auto"  # auto | few-shot | chat
    n_ctx: int = 2048
    n_threads: int = 0
    n_gpu_layers: int = 0
    max_new_tokens: int = 160


@dataclass
class TranslationResult:
    """One translation: text, its tokens, and what it cost."""

    source: str
    text: str
    tokens: list[int]
    prompt_tokens: int
    evaluated_tokens: int
    seconds: float


def repetition_span(tokens: list[int], repeats: int = 3, max_span: int = 16) -> int:
    """Length L of a span the tail repeats ``repeats`` times in a row (0 if none).

    Small models fall into loops under greedy decoding ("你所做的事情，你所做的事情，…");
    generation stops there. The rule is deterministic, so every engine that uses it
    still reproduces the same greedy output.
    """
    for span in range(1, max_span + 1):
        need = span * repeats
        if len(tokens) < need or (span == 1 and len(tokens) < 6):
            continue
        tail = tokens[-span:]
        if all(tokens[-(k + 1) * span:len(tokens) - k * span] == tail for k in range(1, repeats)):
            if span == 1 and not all(t == tail[0] for t in tokens[-6:]):
                continue
            return span
    return 0


def _resolve_style(runner: LlamaRunner, style: str) -> str:
    if style != "auto":
        return style
    meta = {k: str(v).lower() for k, v in runner.metadata.items()}
    name = " ".join(meta.get(k, "") for k in ("general.name", "general.finetune", "general.basename"))
    if "tokenizer.chat_template" in meta and re.search(r"\b(it|instruct|chat)\b|-it\b|instruct", name):
        return "chat"
    return "few-shot"


class LlamaTranslator:
    """Greedy re-translation from scratch with llama.cpp; one owner thread."""

    def __init__(self, model_path: str | Path, options: TranslatorOptions | None = None) -> None:
        self.options = options or TranslatorOptions()
        self.runner = LlamaRunner(model_path, self.options.n_ctx, self.options.n_threads, self.options.n_gpu_layers)
        self.style = _resolve_style(self.runner, self.options.prompt_style)
        self.name = f"llama-ar:{Path(model_path).name}"
        self._chat_formatter = None
        if self.style == "chat":
            self._chat_formatter = self._make_chat_formatter()
        logger.info("translator %s, prompt style %s", Path(model_path).name, self.style)

    def _make_chat_formatter(self):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.runner.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelError("This translation model has no chat template; set the prompt style to few-shot.")
        llm = self.runner.llm
        eos = llm._model.token_get_text(llm.token_eos())
        bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else ""
        return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)

    def prompt_text(self, source: str) -> str:
        """The full prompt for ``source`` (the translation is generated after it)."""
        opts = self.options
        if self.style == "chat":
            assert self._chat_formatter is not None
            result = self._chat_formatter(messages=chat_messages(source, opts.source_lang, opts.target_lang))
            return result.prompt
        return few_shot_prompt(source, opts.source_lang, opts.target_lang)

    def prompt_tokens(self, source: str) -> list[int]:
        """Tokens of the prompt for ``source`` (with BOS)."""
        text = self.prompt_text(source)
        tokens = self.runner.tokenize(text, add_bos=True)
        bos = self.runner.llm.token_bos()
        if len(tokens) > 1 and tokens[0] == bos and tokens[1] == bos:  # chat templates often add BOS themselves
            tokens = tokens[1:]
        return tokens

    def translate(self, source: str) -> TranslationResult:
        """Translate one sentence (or sentence prefix) greedily, from scratch."""
        source = " ".join(source.split())
        t0 = time.perf_counter()
        if not source:
            return TranslationResult(source, "", [], 0, 0, 0.0)
        prompt = self.prompt_tokens(source)
        budget = self.runner.n_ctx - len(prompt)
        max_new = min(self.options.max_new_tokens, 2 * len(self.runner.tokenize(source)) + 16)
        if budget < max_new + 1:
            return self._translate_long(source, t0)
        start_eval = self.runner.evaluated
        try:
            with COMPUTE_GATE:
                t0 = time.perf_counter()  # compute time only, not the wait for the gate
                out = self._generate(prompt, max_new)
        except ModelError:
            raise
        except Exception as exc:
            logger.exception("translation of %r failed", source)
            raise TranslationError(f"The translator failed ({exc}).") from exc
        text = self.runner.detokenize(out).strip()
        return TranslationResult(source, text, out, len(prompt), self.runner.evaluated - start_eval,
                                 time.perf_counter() - t0)

    def _generate(self, prompt: list[int], max_new: int) -> list[int]:
        """Greedy decoding from scratch: clear the cache, evaluate the prompt, pick argmax until a stop."""
        self.runner.truncate(0)
        logits = self.runner.eval(prompt)
        out: list[int] = []
        for _ in range(max_new):
            token = int(np.argmax(logits))
            if self.runner.is_stop(token):
                break
            out.append(token)
            loop = repetition_span(out)
            if loop:
                del out[len(out) - 2 * loop:]  # keep the first occurrence only
                break
            logits = self.runner.eval([token])
        return out

    def _translate_long(self, source: str, t0: float) -> TranslationResult:
        """A source too long for the context: translate it in halves and join (logged)."""
        words = source.split()
        if len(words) < 2:
            raise TranslationError("The text to translate is too long for the translation model's context.")
        logger.warning("source of %d words exceeds the translation context; translating it in two parts", len(words))
        mid = len(words) // 2
        for i in range(mid, len(words) - 1):  # prefer to split after punctuation near the middle
            if words[i].endswith((",", ";", ":", ".")):
                mid = i + 1
                break
        first = self.translate(" ".join(words[:mid]))
        second = self.translate(" ".join(words[mid:]))
        joiner = "" if self.options.target_lang in ("ja", "zh") else " "
        return TranslationResult(
            source,
            (first.text + joiner + second.text).strip(),
            first.tokens + second.tokens,
            first.prompt_tokens + second.prompt_tokens,
            first.evaluated_tokens + second.evaluated_tokens,
            time.perf_counter() - t0,
        )

    def close(self) -> None:
        """Free the model."""
        self.runner.close()

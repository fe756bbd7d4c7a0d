"""Translation prompts: few-shot for base models, chat template for instruct models."""

from __future__ import annotations

import re

from ..text import UNSPACED_LANGUAGES, language_name
from .quality import spelled_out

# Four short example pairs per target language, for base (non-instruct) models; the last one is
# quoted speech, which the bundled model otherwise tends to copy untranslated.
EXAMPLES_EN = (
    "The weather is nice today.",
    "Where is the train station?",
    "I would like to thank everyone who came here tonight.",
    '"We will not give up," the minister said.',
)
QUOTED_EXAMPLE = 3  # the index of the quoted-speech example
FEW_SHOT = {
    "de": (
        "Das Wetter ist heute schön.",
        "Wo ist der Bahnhof?",
        "Ich möchte allen danken, die heute Abend hierher gekommen sind.",
        "„Wir werden nicht aufgeben“, sagte der Minister.",
    ),
    "ja": (
        "今日はいい天気です。",
        "駅はどこですか？",
        "今夜ここに来てくださった皆さんに感謝したいと思います。",
        "「私たちは諦めない」と大臣は述べた。",
    ),
    "zh": ("今天天气很好。", "火车站在哪里？", "我要感谢今晚来到这里的每一个人。", "“我们不会放弃，”部长说。"),
    "fr": (
        "Il fait beau aujourd'hui.",
        "Où est la gare ?",
        "Je voudrais remercier tous ceux qui sont venus ici ce soir.",
        "« Nous n'abandonnerons pas », a déclaré le ministre.",
    ),
    "es": (
        "Hoy hace buen tiempo.",
        "¿Dónde está la estación de tren?",
        "Me gustaría agradecer a todos los que vinieron aquí esta noche.",
        "«No nos rendiremos», dijo el ministro.",
    ),
    "it": (
        "Oggi il tempo è bello.",
        "Dov'è la stazione?",
        "Vorrei ringraziare tutti coloro che sono venuti qui stasera.",
        "«Non ci arrenderemo», ha detto il ministro.",
    ),
    "pt": (
        "O tempo está bom hoje.",
        "Onde fica a estação de comboios?",
        "Gostaria de agradecer a todos os que vieram aqui esta noite.",
        "«Não vamos desistir», disse o ministro.",
    ),
    "nl": (
        "Het weer is mooi vandaag.",
        "Waar is het station?",
        "Ik wil iedereen bedanken die hier vanavond is gekomen.",
        "‘We geven niet op’, zei de minister.",
    ),
    "ko": (
        "오늘은 날씨가 좋습니다.",
        "기차역이 어디에 있습니까?",
        "오늘 밤 이곳에 와 주신 모든 분들께 감사드립니다.",
        '"우리는 포기하지 않을 것입니다"라고 장관이 말했다.',
    ),
    "ru": (
        "Сегодня хорошая погода.",
        "Где находится вокзал?",
        "Я хотел бы поблагодарить всех, кто пришёл сюда сегодня вечером.",
        "«Мы не сдадимся», — сказал министр.",
    ),
}


def few_shot_prompt(source: str, source_lang: str, target_lang: str, leave_out: int | None = None) -> str:
    """A few-shot prompt ending where the model writes the translation (stops at a newline).

    Each pair is two lines tagged with language codes in brackets (``[en] …`` / ``[de] …``): read
    as a parallel text, not as a list or a dialogue to continue. The bundled 270M model translates
    better with them than with ``English: …`` / ``German: …`` pairs in every language measured; see
    ``sotto bench prompts`` and docs/BENCHMARKS.md.
    ``leave_out``: the index of an example to leave out (one the model repeated instead of
    translating, see :func:`borrowed_example`)."""
    lines = []
    if source_lang == "en" and target_lang in FEW_SHOT:
        for i, (en, tr) in enumerate(zip(EXAMPLES_EN, FEW_SHOT[target_lang], strict=True)):
            if i == leave_out:
                continue
            lines.append(f"[{source_lang}] {en}\n[{target_lang}] {tr}\n")
    lines.append(f"[{source_lang}] {source}\n[{target_lang}]")
    return "".join(lines)


# an output holding this many consecutive words of an example (fewer for a shorter example) took them
# from the prompt, unless the source says them too
BORROWED_WORDS = 4


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def borrowed_example(text: str, source: str, source_lang: str, target_lang: str) -> int | None:
    """The index of the few-shot example whose words ``text`` repeats although ``source`` does not say
    them: :data:`BORROWED_WORDS` consecutive words of the example, in either language. A small base
    model sometimes answers with an example instead of translating ("Making a famine where abundance
    lies …" came out as the quoted-speech example), falls back on one when steered away from a copy,
    or borrows part of one ("„Wir werden nicht aufgeben“, sagte die Opposition." before a news
    sentence; 'mock "news anchor" voice.' → '"We will not give up" voice.'), or puts the quoted-speech
    example's frame around a sentence that quotes nothing (:func:`speech_frame`; that example's index).
    Else None."""
    if source_lang != "en" or target_lang not in FEW_SHOT:
        return None
    said, heard = _words(text), _words(source)
    for i, pair in enumerate(zip(EXAMPLES_EN, FEW_SHOT[target_lang], strict=True)):
        english = _words(pair[0])
        n = min(BORROWED_WORDS, len(english))
        if _runs(english, n) & _runs(heard, n):
            continue  # the source says the example's words: its translation may too
        for example in pair:
            words = _words(example)
            if _runs(words, min(BORROWED_WORDS, len(words))) & _runs(said, min(BORROWED_WORDS, len(words))):
                return i
    if speech_frame(text, source, target_lang):
        return QUOTED_EXAMPLE
    return None


def speech_frame(text: str, source: str, target_lang: str) -> bool:
    """``text`` puts the quoted-speech example's frame (a closing quotation mark, then the example's verb of
    saying: "“, sagte") around words that ``source`` neither quotes nor says someone said: the small model
    makes a speaker up ("Ok an XL will be the best choice then." → "„OK“, sagte XL, werde die beste Wahl.",
    "ALright your table for 3 is set …" → "„Wir haben uns für 3 entschieden“, sagte der Chef."). A
    language written without spaces has no word to tell the frame by: never."""
    from .quality import adds_quotation

    example = FEW_SHOT.get(target_lang, ("",) * len(EXAMPLES_EN))[QUOTED_EXAMPLE]
    after = re.split(r"[“”»’\"]", example)[-1]
    verb = re.findall(r"\w+", after)[:1]
    if (not verb or target_lang in UNSPACED_LANGUAGES or not adds_quotation(source, text)
            or re.search(r"\bsa(?:id|ys|y)\b", source, re.I)):
        return False
    return re.search(r"[”»’“\"][\s,—–-]*" + re.escape(verb[0]) + r"\b", text) is not None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def needs_no_translation(source: str) -> bool:
    """A source without a letter (a number, "1.", punctuation), or one that only spells a name or a code
    letter by letter (:func:`core.translate.quality.spelled_out`: "j e f f."), is shown as it is: asked
    to translate "1." the bundled model wrote "2.", continuing what it took for a list."""
    return not any(ch.isalpha() for ch in source) or spelled_out(source)


# How each instruct model is asked to translate (a catalogue model's ``chat_prompt``; core.models.registry):
# the wording of its model card, since a model tuned for translation was trained on it.
CHAT_PROMPTS = ("generic", "hy-mt", "eurollm", "translategemma")
# BCP-47 codes as TranslateGemma's template takes them (Chinese by its script)
_BCP47 = {"zh": "zh-Hans"}


def chat_messages(source: str, source_lang: str, target_lang: str, prompt: str = "generic") -> list[dict[str, str]]:
    """Messages for an instruct model's chat template, in the wording ``prompt`` names (:data:`CHAT_PROMPTS`;
    ``translategemma`` is written whole by :func:`raw_chat_prompt` instead)."""
    src_name, tgt_name = language_name(source_lang), language_name(target_lang)
    if prompt == "hy-mt":  # tencent/Hy-MT2 README: no source language, and its own wording into Chinese
        if target_lang == "zh":
            return [{"role": "user", "content": f"将以下文本翻译为中文，注意只需要输出翻译后的结果，不要额外解释：\n\n"
                                                f"{source}"}]
        return [{"role": "user", "content": (f"Translate the following text into {tgt_name}. Note that you should only "
                                             f"output the translated result without any additional explanation:"
                                             f"\n\n{source}")}]
    if prompt == "eurollm":  # utter-project/EuroLLM-1.7B-Instruct model card: an empty system turn, labelled lines
        return [{"role": "system", "content": ""},
                {"role": "user", "content": (f"Translate the following {src_name} source text to {tgt_name}:\n"
                                             f"{src_name}: {source} \n{tgt_name}: ")}]
    if prompt != "generic":
        raise ValueError(f"no chat messages are written for the {prompt!r} prompt")
    return [
        {
            "role": "user",
            "content": (
                f"Translate the following {src_name} text into {tgt_name}. "
                f"Reply with the translation only.\n\n{source}"
            ),
        }
    ]


def raw_chat_prompt(source: str, source_lang: str, target_lang: str, prompt: str) -> str | None:
    """The whole prompt, turn markers included, for a model whose own chat template cannot take plain
    messages (None for the others). TranslateGemma's template wants each message's text with its
    language codes as structured content and writes the instruction itself; this is what it renders
    (google/translategemma-4b-it), the reply's start included."""
    if prompt != "translategemma":
        return None
    src, tgt = language_name(source_lang), language_name(target_lang)
    src_code, tgt_code = _BCP47.get(source_lang, source_lang), _BCP47.get(target_lang, target_lang)
    return (f"<start_of_turn>user\nYou are a professional {src} ({src_code}) to {tgt} ({tgt_code}) translator. "
            f"Your goal is to accurately convey the meaning and nuances of the original {src} text while adhering "
            f"to {tgt} grammar, vocabulary, and cultural sensitivities.\nProduce only the {tgt} translation, "
            f"without any additional explanations or commentary. Please translate the following {src} text into "
            f"{tgt}:\n\n\n{source}<end_of_turn>\n<start_of_turn>model\n")

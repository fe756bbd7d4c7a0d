"""Translation prompts: few-shot for base models, chat template for instruct models."""

from __future__ import annotations

from ..text import language_name

# Three short example pairs per target language, for base (non-instruct) models.
_EXAMPLES_EN = (
    "The weather is nice today.",
    "Where is the train station?",
    "I would like to thank everyone who came here tonight.",
)
FEW_SHOT = {
    "de": ("Das Wetter ist heute schön.", "Wo ist der Bahnhof?",
           "Ich möchte allen danken, die heute Abend hierher gekommen sind."),
    "ja": ("今日はいい天気です。", "駅はどこですか？", "今夜ここに来てくださった皆さんに感謝したいと思います。"),
    "zh": ("今天天气很好。", "火车站在哪里？", "我要感谢今晚来到这里的每一个人。"),
    "fr": ("Il fait beau aujourd'hui.", "Où est la gare ?",
           "Je voudrais remercier tous ceux qui sont venus ici ce soir."),
    "es": ("Hoy hace buen tiempo.", "¿Dónde está la estación de tren?",
           "Me gustaría agradecer a todos los que vinieron aquí esta noche."),
    "it": ("Oggi il tempo è bello.", "Dov'è la stazione?",
           "Vorrei ringraziare tutti coloro che sono venuti qui stasera."),
    "pt": ("O tempo está bom hoje.", "Onde fica a estação de comboios?",
           "Gostaria de agradecer a todos os que vieram aqui esta noite."),
    "nl": ("Het weer is mooi vandaag.", "Waar is het station?",
           "Ik wil iedereen bedanken die hier vanavond is gekomen."),
    "ko": ("오늘은 날씨가 좋습니다.", "기차역이 어디에 있습니까?", "오늘 밤 이곳에 와 주신 모든 분들께 감사드립니다."),
    "ru": ("Сегодня хорошая погода.", "Где находится вокзал?",
           "Я хотел бы поблагодарить всех, кто пришёл сюда сегодня вечером."),
}


def few_shot_prompt(source: str, source_lang: str, target_lang: str) -> str:
    """A few-shot prompt ending where the model writes the translation (stops at a newline)."""
    src_name, tgt_name = language_name(source_lang), language_name(target_lang)
    lines = []
    if source_lang == "en" and target_lang in FEW_SHOT:
        for en, tr in zip(_EXAMPLES_EN, FEW_SHOT[target_lang]):
            lines.append(f"{src_name}: {en}\n{tgt_name}: {tr}\n")
    lines.append(f"{src_name}: {source}\n{tgt_name}:")
    return "\n".join(lines)


def chat_messages(source: str, source_lang: str, target_lang: str) -> list[dict[str, str]]:
    """Messages for an instruct model's chat template."""
    src_name, tgt_name = language_name(source_lang), language_name(target_lang)
    return [
        {
            "role": "user",
            "content": (
                f"Translate the following {src_name} text into {tgt_name}. "
                f"Reply with the translation only.\n\n{source}"
            ),
        }
    ]

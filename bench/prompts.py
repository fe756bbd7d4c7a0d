"""`sotto bench prompts`: prompt formats for a small base translation model, by chrF.

Each variant translates the same NTREX-128 lines (default: lines 1000–1039, kept out of the
tables of `sotto bench translate`, which use the first 100) with plain greedy decoding, one
sentence after another (variants with context see the model's own previous translation, as the
app would). One process, one model; chrF (sacrebleu, default settings) per variant and language.

Variants:
  labels          `English: …` / `German: …` pairs, a blank line between pairs (the format before)
  labels+instr    the same under a one-line instruction ("Translate from English into German.")
  labels+news     the same with three news sentences as the examples
  labels+context  the same with the previous sentence and its translation as the last example
  codes           `[en] …` / `[de] …` lines, the three short examples
  codes+quote     the same plus a quoted-speech example (core.translate.prompts), whole sentences
  codes+quote+pieces  the same, a long sentence clause by clause (core.translate.clauses): what the app does

Every variant but the last translates whole sentences.

Usage: sotto bench prompts [--langs de,ja,zh] [--start 1000] [--sentences 40] [--variants a,b]
                           [--model NAME|PATH] [--json FILE] [--write-docs] [--from-json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NTREX = ROOT.parent / "shared" / "data" / "mt" / "ntrex128"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
REF_FILES = {"de": "newstest2019-ref.deu.txt", "ja": "newstest2019-ref.jpn.txt", "zh": "newstest2019-ref.zho-CN.txt"}
BEGIN, END = "<!-- prompts:begin -->", "<!-- prompts:end -->"
VARIANTS = ("labels", "labels+instr", "labels+news", "labels+context", "codes", "codes+quote", "codes+quote+pieces")
APP = "codes+quote+pieces"

_NEWS_EN = ("The company said on Tuesday that it would cut 500 jobs.",
            "Police are asking anyone with information to come forward.",
            "It was the first time in ten years that the team had won the title.")
_NEWS = {
    "de": (
        "Das Unternehmen teilte am Dienstag mit, dass es 500 Stellen streichen werde.",
        "Die Polizei bittet alle, die Hinweise geben können, sich zu melden.",
        "Es war das erste Mal seit zehn Jahren, dass die Mannschaft den Titel gewann.",
    ),
    "ja": (
        "同社は火曜日、500人の人員削減を行うと発表した。",
        "警察は情報を持っている人に名乗り出るよう呼びかけている。",
        "チームがタイトルを獲得したのは10年ぶりのことだった。",
    ),
    "zh": ("该公司周二表示将裁员500人。", "警方呼吁任何知情者提供线索。", "这是该队十年来首次夺得冠军。"),
}


def build(variant: str, source: str, lang: str, previous: tuple[str, str] | None,
          leave_out: int | None = None) -> str:
    """The prompt text of ``variant`` for ``source`` (English into ``lang``); ``leave_out``: the
    example the translator leaves out when the model gave it back instead of a translation."""
    from core.text import language_name
    from core.translate.prompts import EXAMPLES_EN, FEW_SHOT, few_shot_prompt

    if variant in ("codes+quote", "codes+quote+pieces"):
        return few_shot_prompt(source, "en", lang, leave_out)
    short = list(zip(EXAMPLES_EN[:3], FEW_SHOT[lang][:3], strict=True))
    if variant == "codes":
        return "".join(f"[en] {e}\n[{lang}] {t}\n" for e, t in short) + f"[en] {source}\n[{lang}]"
    pairs = list(zip(_NEWS_EN, _NEWS[lang], strict=True)) if variant == "labels+news" else short
    if variant == "labels+context" and previous is not None:
        pairs.append(previous)
    s, t = language_name("en"), language_name(lang)
    head = f"Translate from {s} into {t}.\n\n" if variant == "labels+instr" else ""
    return head + "\n".join(f"{s}: {e}\n{t}: {x}\n" for e, x in pairs) + f"\n{s}: {source}\n{t}:"


def run(model: str, langs: list[str], start: int, n: int, variants: list[str]) -> dict:
    import sacrebleu

    from core.models import ModelStore
    from core.translate.translator import LlamaTranslator, TranslatorOptions

    sources = (NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()[start:start + n]
    store = ModelStore()
    translator = LlamaTranslator(store.resolve(model), TranslatorOptions(target_lang=langs[0]))
    rows = []
    try:
        for lang in langs:
            refs = (NTREX / REF_FILES[lang]).read_text(encoding="utf-8").splitlines()[start:start + n]
            translator.options.target_lang = lang
            for variant in variants:
                translator.options.clause_pieces = variant == APP
                translator.forget()  # piece translations of another prompt are not this one's
                outputs, previous, t0 = [], None, time.perf_counter()
                for source in sources:
                    translator.prompt_text = (  # the variant's prompt instead of the app's
                        lambda text, leave_out=None, v=variant, p=previous, lg=lang: build(v, text, lg, p, leave_out))
                    text = translator.translate(source).text
                    outputs.append(text)
                    previous = (source, text) if text else None
                chrf = round(sacrebleu.corpus_chrf(outputs, [refs]).score, 2)
                copied = sum(1 for s, o in zip(sources, outputs, strict=True) if o.strip() == s.strip())
                rows.append({"lang": lang, "variant": variant, "chrf": chrf, "copied": copied,
                             "seconds": round(time.perf_counter() - t0, 1), "sample": outputs[:2]})
                print(f"{lang} {variant}: chrF {chrf} ({copied} left in English)", file=sys.stderr)
    finally:
        translator.close()
    return {"model": model, "start": start, "sentences": n, "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores", "rows": rows}


def table(result: dict) -> str:
    langs = list(dict.fromkeys(r["lang"] for r in result["rows"]))
    variants = list(dict.fromkeys(r["variant"] for r in result["rows"]))
    by = {(r["lang"], r["variant"]): r for r in result["rows"]}
    out = ["| prompt | " + " | ".join(f"chrF {lg} (left in English)" for lg in langs) + " |",
           "|---|" + "---|" * len(langs)]
    for v in variants:
        cells = [f"{by[(lg, v)]['chrf']:.1f} ({by[(lg, v)]['copied']})" if (lg, v) in by else "–" for lg in langs]
        mark = " (the app's)" if v == APP else ""
        out.append(f"| {v}{mark} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def write_docs(result: dict, command: str) -> None:
    from .docs import write_section

    write_section(BEGIN, END, f"`{command}` — model {result['model']}, NTREX-128 lines {result['start']}–"
                  f"{result['start'] + result['sentences'] - 1} (not in the SSBD tables), whole sentences, "
                  f"greedy; {result['machine']}, {result['date']}.\n\n{table(result)}",
                  "## Translation prompts for small base models (`sotto bench prompts`)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench prompts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--langs", default="de,ja,zh")
    parser.add_argument("--start", type=int, default=1000)
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--model", default="gemma-3-270m")
    parser.add_argument("--json")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--from-json", help="table and docs from an earlier --json file (no run)")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",")]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; choose from: {', '.join(VARIANTS)}")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        result = run(args.model, args.langs.split(","), args.start, args.sentences, variants)
    print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.write_docs:
        cmd = "sotto bench prompts" + ("" if args.variants == ",".join(VARIANTS) else f" --variants {args.variants}")
        write_docs(result, cmd + ("" if args.langs == "de,ja,zh" else f" --langs {args.langs}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

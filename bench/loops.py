"""`sotto bench loops`: how often a finished translation loops, breaks off or stays in English, with
the translator's loop rules of before and after issue #27, side by side on NTREX sentences.

Every sentence is translated whole as a finished one (greedy, as the app freezes a finished
sentence under its default `final-exact` scope; clause pieces as the app uses them):
  before  loops are one token six times, a span three times or a word three times; generation ends
          at the loop's cut (the rules until issue #27)
  after   also a phrase of two or more words twice; after a cut, generation goes on from it with the
          token that began the loop banned there (at most `loop_restarts` times), the app's default
The counts come from core/translate/quality.py: a phrase said twice in a row (where the source does
not), a fragment shorter than half the sentence, a copy left mostly in English.

Usage: sotto bench loops [--lang de] [--start 0] [--sentences 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time

from .output import report
from .translate import NTREX, REF_FILES, broken

RULES = {
    "before": {"phrase_loops": False, "loop_restarts": 0},
    "after": {},  # the defaults of TranslatorOptions
}


def run(lang: str, start: int, n: int) -> dict:
    import sacrebleu

    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions
    from core.translate.quality import is_copy, is_fragment, phrase_loop

    src = (NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()[start:start + n]
    ref = (NTREX / REF_FILES[lang]).read_text(encoding="utf-8").splitlines()[start:start + n]
    base = TranslatorOptions(target_lang=lang, prompt_style="few-shot")
    translator = LlamaTranslator(ModelStore().resolve("gemma-3-270m"), base)
    rows, outputs = {}, {}
    try:
        for name, rules in RULES.items():
            translator.options = dataclasses.replace(base, **rules)
            translator.forget()  # no clause piece is free for the second configuration
            t0 = time.perf_counter()
            finals = []
            for i, sentence in enumerate(src):
                finals.append(translator.translate(sentence, final=True).text)
                print(f"\r[{name}] {i + 1}/{len(src)}", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
            outputs[name] = finals
            rows[name] = {"seconds": round(time.perf_counter() - t0, 1),
                          "chrf": round(sacrebleu.corpus_chrf(finals, [ref]).score, 2),
                          **broken(src, finals, lang)}
    finally:
        translator.close()
    changed = [{"source": s, "before": b, "after": a,
                "before_broken": [k for k, f in (("loop", phrase_loop(b) and not phrase_loop(s)),
                                                 ("fragment", is_fragment(s, b, lang)), ("copy", is_copy(s, b))) if f]}
               for s, b, a in zip(src, outputs["before"], outputs["after"], strict=True) if a != b]
    still = [{"source": s, "after": a,
              "broken": [k for k, f in (("loop", phrase_loop(a) and not phrase_loop(s)),
                                        ("fragment", is_fragment(s, a, lang)), ("copy", is_copy(s, a))) if f]}
             for s, a in zip(src, outputs["after"], strict=True)]
    return {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "lang": lang, "start": start, "sentences": len(src), "rows": rows, "changed": changed,
            "still_broken": [x for x in still if x["broken"]], "outputs": outputs}


def table(result: dict) -> str:
    lines = [f"English → {result['lang']}, NTREX sentences {result['start']}–{result['start'] + result['sentences']}, "
             f"each translated whole ({result['machine']}, {result['date']}):", "",
             "| loop rules | phrase said twice | fragments | copies left in English | chrF | seconds |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, r in result["rows"].items():
        lines.append(f"| {name} | {r['phrase_loops']} | {r['fragments']} | {r['copies']} | {r['chrf']} | "
                     f"{r['seconds']} |")
    lines += ["", f"{len(result['changed'])} of {result['sentences']} translations changed:"]
    for c in result["changed"]:
        why = ", ".join(c["before_broken"]) or "not flagged before"
        lines.append(f"- ({why}) {c['source']!r}: {c['before']!r} → {c['after']!r}")
    frag = [x for x in result.get("still_broken", []) if "copy" not in x["broken"] or len(x["broken"]) > 1]
    if frag:
        lines += ["", "Still a loop or a fragment with the new rules:"]
        lines += [f"- ({', '.join(x['broken'])}) {x['source']!r}: {x['after']!r}" for x in frag]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench loops", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", default="de", choices=sorted(REF_FILES))
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    result = run(args.lang, args.start, args.sentences)
    return report(result, args.json, table(result))


if __name__ == "__main__":
    sys.exit(main())

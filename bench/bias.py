"""`sotto bench bias`: where SSBD's bias applies, by translation quality and flicker.

The SSBD paper biases every verification toward the previous translation. With a 270M model
that locks in poor early prefixes (the paper scope's rows of `sotto bench translate`). Each variant here keeps
β = 0.2 but narrows where it applies; every sentence is streamed as lag-3 prefixes and then
translated whole as a finished sentence, as in `sotto bench translate` (KV-prefix reuse on for
all). Outputs are deterministic, so one run per variant; the cost is counted in tokens the
model evaluated (machine-independent), the seconds are in `sotto bench translate`.

Variants:
  ar           greedy re-translation (the reference: chrF and NE of plain decoding)
  paper        β applies to every draft token of every update (SSBD as published)
  final-exact  β steadies the unfinished line only; a finished sentence is verified at β = 0,
               so its translation is exactly greedy decoding's (the draft only speeds it up)
  holdback-K   β applies only to the draft's share that translates the source words the two
               updates share, less the last K of them; the rest is verified at β = 0
  floor-P      β applies only where the model gives the draft token probability ≥ P
  holdback-K+final-exact, floor-P+final-exact   both rules

The issue's rule for a default: in every language, lose at most 1.0 chrF against AR and keep at
least 70% of the paper's NE reduction. The table says which variants pass on the lines measured
and which of them flickers least; the app's default (`translation.bias_scope`) must pass on the
held-out selection lines and on the test lines (docs/BENCHMARKS.md).

Usage: sotto bench bias [--langs de,ja,zh] [--start 0] [--sentences 100] [--variants a,b]
                        [--json FILE] [--write-docs] [--from-json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from .translate import NTREX, REF_FILES, Config, run_config, scores

BEGIN, END = "<!-- bias:begin -->", "<!-- bias:end -->"
HEADING = "## Where the bias applies (`sotto bench bias`)"
DEFAULT_VARIANTS = "ar,paper,final-exact,holdback-1,holdback-1+final-exact,floor-0.1"
BETA = 0.2
MAX_CHRF_LOSS = 1.0
MIN_NE_SHARE = 0.70


def config(name: str) -> Config:
    """The translator configuration of variant ``name``."""
    if name == "ar":
        return Config(name, None, reuse=True)
    from core.translate.translator import bias_rules

    try:
        return Config(name, BETA, reuse=True, display_mask_k=3, **bias_rules(name))
    except ValueError as exc:
        raise ValueError(f"{exc} (see `sotto bench bias --help`)") from None


def run(langs: list[str], start: int, n: int, variants: list[str], model: str = "gemma-3-270m",
        json_path: str | None = None, threads: int = 0) -> dict:
    """Every variant in every language; the JSON file (if any) is rewritten after each, so a long
    run cut short keeps what it measured."""
    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions

    src = (NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()[start:start + n]
    translator = LlamaTranslator(
        ModelStore().resolve(model), TranslatorOptions(target_lang=langs[0], n_threads=threads)
    )
    rows: list[dict] = []
    result = {"model": model, "start": start, "sentences": n, "beta": BETA, "date": time.strftime("%Y-%m-%d"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores", "rows": rows}
    try:
        for lang in langs:
            ref = (NTREX / REF_FILES[lang]).read_text(encoding="utf-8").splitlines()[start:start + n]
            translator.options.target_lang = lang
            for name in variants:
                t0 = time.perf_counter()
                streamed = run_config(translator, config(name), src, lang)
                row = {"lang": lang, "variant": name, **scores(streamed, ref, lang),
                       "wall_seconds": round(time.perf_counter() - t0, 1)}
                rows.append(row)
                print(f"[{lang}] {name}: chrF {row['chrf']}, NE {row['ne']}, NE shown {row['ne_display']}, "
                      f"evaluated {row['evaluated_tokens']}", file=sys.stderr, flush=True)
                if json_path:
                    Path(json_path).write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    finally:
        translator.close()
    return result


def judge(result: dict) -> dict:
    """Per variant and language: chrF against AR, share of the paper's NE reduction; the default."""
    by = {(r["lang"], r["variant"]): r for r in result["rows"]}
    langs = list(dict.fromkeys(r["lang"] for r in result["rows"]))
    variants = list(dict.fromkeys(r["variant"] for r in result["rows"]))
    verdict: dict = {"variants": {}, "default": None}
    for v in variants:
        if v == "ar":
            continue
        per = {}
        for lg in langs:
            ar, paper, row = by.get((lg, "ar")), by.get((lg, "paper")), by.get((lg, v))
            if ar is None or row is None:
                continue
            reduction = (ar["ne"] - paper["ne"]) if paper is not None else None
            share = (ar["ne"] - row["ne"]) / reduction if reduction else None
            per[lg] = {"chrf_vs_ar": round(row["chrf"] - ar["chrf"], 2),
                       "ne_share": round(share, 3) if share is not None else None,
                       "evaluated_vs_ar": round(row["evaluated_tokens"] / max(ar["evaluated_tokens"], 1), 3)}
        passes = bool(per) and all(p["chrf_vs_ar"] >= -MAX_CHRF_LOSS and p["ne_share"] is not None
                                   and p["ne_share"] >= MIN_NE_SHARE for p in per.values())
        verdict["variants"][v] = {
            "languages": per,
            "passes": passes,
            # None when no AR row was run beside it (nothing to judge against)
            "mean_ne": round(statistics.mean(by[(lg, v)]["ne"] for lg in per), 3) if per else None,
        }
    passing = [v for v, j in verdict["variants"].items() if j["passes"]]
    if passing:
        verdict["default"] = min(passing, key=lambda v: verdict["variants"][v]["mean_ne"])
    return verdict


def table(result: dict) -> str:
    verdict = judge(result)
    by = {(r["lang"], r["variant"]): r for r in result["rows"]}
    langs = list(dict.fromkeys(r["lang"] for r in result["rows"]))
    variants = list(dict.fromkeys(r["variant"] for r in result["rows"]))
    out = ["| variant | language | chrF | vs AR | NE | NE shown (mask-3) | share of the paper's NE reduction "
           "| A/D | A/O | tokens evaluated vs AR |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        for lg in langs:
            r = by.get((lg, v))
            if r is None:
                continue
            j = verdict["variants"].get(v, {}).get("languages", {}).get(lg, {})
            vs = f"{j['chrf_vs_ar']:+.2f}" if j else "–"
            share = f"{j['ne_share']:.0%}" if j.get("ne_share") is not None else "–"
            ev = f"{j['evaluated_vs_ar']:.2f}×" if j else "1×"
            ad = f"{r['a_d']:.3f}" if r["a_d"] is not None else "–"
            shown = f"{r['ne_display']:.3f}" if v != "ar" else "–"
            out.append(f"| {v} | {lg} | {r['chrf']:.2f} | {vs} | {r['ne']:.3f} | {shown} | {share} | {ad} | "
                       f"{r['a_o']:.3f} | {ev} |")
    rule = (f"The issue's rule: in every language at most {MAX_CHRF_LOSS:g} chrF below AR and at least "
            f"{MIN_NE_SHARE:.0%} of the paper's NE reduction.")
    passing = [f"`{v}`" for v, j in verdict["variants"].items() if j["passes"]]
    chosen = verdict["default"]
    out += ["", rule + (f" Passing on these lines: {', '.join(passing)}; the lowest mean NE among them: `{chosen}`."
                        if chosen else " No variant passes on these lines.")]
    return "\n".join(out)


def write_docs(result: dict, command: str) -> None:
    from .docs import write_section

    write_section(BEGIN, END, f"`{command}` — model {result['model']}, β = {result['beta']}, NTREX-128 lines "
                  f"{result['start']}–{result['start'] + result['sentences'] - 1}, lag-3 prefixes then the whole "
                  f"sentence as finished; {result['machine']}, {result['date']}.\n\n{table(result)}", HEADING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench bias", description=__doc__.split("\n\n")[0])
    parser.add_argument("--langs", default="de,ja,zh")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (default: every core; the "
                        "outputs do not depend on it)")
    parser.add_argument("--json")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--from-json", help="table and docs from an earlier --json file (no run)")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",")]
    for v in variants:
        try:
            config(v)
        except ValueError as exc:
            parser.error(str(exc))
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        result = run(args.langs.split(","), args.start, args.sentences, variants, json_path=args.json,
                     threads=args.threads)
    print(table(result))
    if args.write_docs:
        command = "sotto bench bias" + ("" if args.variants == DEFAULT_VARIANTS else f" --variants {args.variants}")
        command += (
            ""
            if (args.start, args.sentences) == (0, 100)
            else f" --start {result['start']} --sentences {result['sentences']}"
        )
        command += "" if args.langs == "de,ja,zh" else f" --langs {args.langs}"
        write_docs(result, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`sotto bench translate`: SSBD vs autoregressive re-translation on NTREX-128, lag-3 streaming.

Each source sentence is fed as growing prefixes of 3, 6, 9 … words and then in
full; every prefix is re-translated, with the previous translation as the
draft (SSBD) or from scratch (AR). All configurations run in one process, one
after the other, on the same model and runtime, so ratios are side by side.

Tables (shaped like the SSBD paper's):
  2 — AR vs SSBD β=0.2, with and without KV-prefix reuse: chrF, BLEU, NE, A/D, A/O, TPS, speedup
      (plus SSBD β=0 with KV reuse, checked token for token against AR)
  3 — β sweep 0 … 1.0 (with KV reuse)
  4 — mask-k 3 and 5, in the draft vs display-only (β=0.2, with KV reuse)

With ``--stock-llama DIR`` (a directory holding llama-cpp-python installed from PyPI with its
default build, llamafile kernels and weight repacking on), plain AR is also timed once with that
build in a child process, each prompt evaluated in one call: what a user of the stock package would
run, so the tables show what the exact build costs.

Usage: sotto bench translate [--quick] [--model NAME|PATH] [--langs de,ja,zh] [--stock-llama DIR]
                             [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NTREX = ROOT.parent / "shared" / "data" / "mt" / "ntrex128"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
REF_FILES = {"de": "newstest2019-ref.deu.txt", "ja": "newstest2019-ref.jpn.txt", "zh": "newstest2019-ref.zho-CN.txt"}
SECTION = "## Translation: SSBD vs autoregressive re-translation"


def _markers(lang: str) -> tuple[str, str]:
    return f"<!-- translate:{lang}:begin -->", f"<!-- translate:{lang}:end -->"


@dataclass
class Config:
    """One translator setting in the benchmark."""

    name: str
    beta: float | None  # None: autoregressive
    reuse: bool = False
    draft_mask_k: int = 0
    display_mask_k: int = 0
    bias_final: bool = True
    bias_floor: float = 0.0
    bias_holdback: int | None = None
    pieces: bool = True  # a long sentence clause by clause (core.translate.clauses), as the app does


@dataclass
class Run:
    """What one configuration produced over the sentences."""

    config: Config
    seconds: float = 0.0
    output_tokens: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    evaluated_tokens: int = 0
    erased_out: int = 0
    erased_disp: int = 0
    final_len: int = 0
    finals: list[str] = field(default_factory=list)
    outputs: list[list[int]] = field(default_factory=list)  # every update's tokens, in order
    gaps: list[list[float]] = field(default_factory=list)
    sentence_seconds: list[float] = field(default_factory=list)


def prefixes(sentence: str, lag: int = 3) -> list[str]:
    """Growing source prefixes, ``lag`` words at a time, ending with the whole sentence."""
    words = sentence.split()
    out = [" ".join(words[:i]) for i in range(lag, len(words), lag)]
    return out + [sentence]


def run_config(translator, config: Config, sources: list[str], lang: str) -> Run:
    """Translate every prefix of every sentence with ``config``."""
    from core.captions.metrics import erasure
    from core.captions.policy import mask_tokens
    from core.text import tokenize

    opts = translator.options
    opts.beta, opts.reuse_prefix, opts.draft_mask_k = config.beta, config.reuse, config.draft_mask_k
    opts.bias_final, opts.bias_floor, opts.bias_holdback = config.bias_final, config.bias_floor, config.bias_holdback
    opts.clause_pieces = config.pieces
    translator.forget()  # no piece translated by an earlier configuration is free for this one
    run = Run(config)
    for sentence in sources:
        draft: list[int] = []
        prev_out: list[str] | None = None
        prev_disp: list[str] | None = None
        t_sentence = 0.0
        steps = prefixes(sentence)
        for i, prefix in enumerate(steps):
            # the last prefix is the whole sentence: translated as a finished one, as the app does
            result = translator.translate(prefix, draft, final=i == len(steps) - 1,
                                          draft_source=steps[i - 1] if i else None)
            draft = result.tokens
            t_sentence += result.seconds
            run.output_tokens += len(result.tokens)
            run.draft_tokens += result.draft_tokens
            run.accepted_tokens += result.accepted_tokens
            run.evaluated_tokens += result.evaluated_tokens
            run.outputs.append(result.tokens)
            run.gaps.append(result.gaps)
            final = i == len(steps) - 1
            out_tokens = tokenize(result.text, lang)
            shown = result.text if final else mask_tokens(result.text, config.display_mask_k, lang)[0]
            disp_tokens = tokenize(shown, lang)
            if prev_out is not None:
                run.erased_out += erasure(prev_out, out_tokens)
                run.erased_disp += erasure(prev_disp, disp_tokens)
            prev_out, prev_disp = out_tokens, disp_tokens
        run.final_len += len(prev_out or [])
        run.finals.append(result.text)
        run.seconds += t_sentence
        run.sentence_seconds.append(t_sentence)
    return run


def scores(run: Run, refs: list[str], lang: str) -> dict:
    """chrF, BLEU and the streaming metrics of one run."""
    import sacrebleu

    tokenize = {"zh": "zh", "ja": "char"}.get(lang, "13a")
    return {
        "chrf": round(sacrebleu.corpus_chrf(run.finals, [refs]).score, 2),
        "bleu": round(sacrebleu.corpus_bleu(run.finals, [refs], tokenize=tokenize).score, 2),
        "ne": round(run.erased_out / max(run.final_len, 1), 3),
        "ne_display": round(run.erased_disp / max(run.final_len, 1), 3),
        "a_d": round(run.accepted_tokens / run.draft_tokens, 3) if run.draft_tokens else None,
        "a_o": round(run.accepted_tokens / max(run.output_tokens, 1), 3),
        "tps": round(run.output_tokens / max(run.seconds, 1e-9), 1),
        "seconds": round(run.seconds, 2),
        "evaluated_tokens": run.evaluated_tokens,
    }


def identity(reference: Run, other: Run, tie_gap: float = 1e-3) -> dict:
    """Compare β=0 SSBD with greedy AR token by token; list every divergence with its top-2 logit gap."""
    divergences = []
    for update, (a, b) in enumerate(zip(reference.outputs, other.outputs, strict=True)):
        if a == b:
            continue
        pos = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        gap = reference.gaps[update][pos] if pos < len(reference.gaps[update]) else None
        divergences.append({"update": update, "position": pos, "top2_gap": gap,
                            "near_tie": gap is not None and gap <= tie_gap})
    n = len(reference.outputs)
    return {"identical_fraction": round((n - len(divergences)) / n, 4) if n else 1.0,
            "identical": not divergences, "divergences": divergences}


def bench_language(translator, lang: str, n_main: int, n_side: int, repeats: int = 3,
                   stock: tuple[str, str] | None = None) -> dict:
    src = (NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()
    ref = (NTREX / REF_FILES[lang]).read_text(encoding="utf-8").splitlines()
    translator.options.target_lang = lang
    main_src, main_ref = src[:n_main], ref[:n_main]
    side_src, side_ref = src[:n_side], ref[:n_side]
    translator.translate(main_src[0])  # warm-up (first-call allocations)
    log = lambda msg: print(f"[{lang}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    stock_row = None
    if stock is not None:  # (directory, model): the stock build's plain AR, once
        stock_row = stock_ar(stock[0], stock[1], lang, n_main)

    table2_cfgs = [
        Config("AR (re-translate from scratch)", None),
        Config("AR + KV-prefix reuse", None, reuse=True),
        Config("SSBD β=0.2", 0.2, display_mask_k=3),
        Config("SSBD β=0.2 + KV-prefix reuse", 0.2, reuse=True, display_mask_k=3),
        Config("SSBD β=0 + KV reuse (lossless check)", 0.0, reuse=True),
    ]
    # every configuration ``repeats`` times, interleaved (a slow moment hits all alike); the
    # outputs are deterministic, the seconds are the median with the spread (min–max) beside it
    runs: dict[str, Run] = {}
    seconds: dict[str, list[float]] = {cfg.name: [] for cfg in table2_cfgs}
    for rep in range(repeats):
        for cfg in table2_cfgs:
            run = run_config(translator, cfg, main_src, lang)
            seconds[cfg.name].append(run.seconds)
            if rep == 0:
                runs[cfg.name] = run
            elif run.outputs != runs[cfg.name].outputs:
                raise RuntimeError(f"{cfg.name}: a repeat produced other tokens (the runtime is not deterministic)")
    table2 = []
    for cfg in table2_cfgs:
        run = runs[cfg.name]
        run.seconds = statistics.median(seconds[cfg.name])
        row = {"config": cfg.name, **scores(run, main_ref, lang),
               "seconds_min": round(min(seconds[cfg.name]), 2), "seconds_max": round(max(seconds[cfg.name]), 2)}
        table2.append(row)
        log(f"{cfg.name}: {row['seconds']} s ({row['seconds_min']}–{row['seconds_max']}), chrF {row['chrf']}, "
            f"NE {row['ne']}")
    ar, ar_kv = runs[table2_cfgs[0].name], runs[table2_cfgs[1].name]
    ar_tps = next(r["tps"] for r in table2 if r["config"] == table2_cfgs[0].name)
    kv_tps = next(r["tps"] for r in table2 if r["config"] == table2_cfgs[1].name)
    for row in table2:
        row["speedup"] = round(ar.seconds / max(row["seconds"], 1e-9), 2)
        row["speedup_vs_ar_kv"] = round(ar_kv.seconds / max(row["seconds"], 1e-9), 2)
        row["tps_ratio"] = round(row["tps"] / max(ar_tps, 1e-9), 2)
        row["tps_ratio_vs_ar_kv"] = round(row["tps"] / max(kv_tps, 1e-9), 2)
    ident = identity(ar, runs["SSBD β=0 + KV reuse (lossless check)"])
    if stock_row is not None:
        row = stock_row
        outputs = row.pop("outputs")
        row["identical_to_exact_ar"] = round(sum(a == b for a, b in zip(outputs, ar.outputs, strict=True))
                                             / max(len(ar.outputs), 1), 4)
        row["speedup"] = round(ar.seconds / max(row["seconds"], 1e-9), 2)
        row["speedup_vs_ar_kv"] = round(ar_kv.seconds / max(row["seconds"], 1e-9), 2)
        row["tps_ratio"] = round(row["tps"] / max(ar_tps, 1e-9), 2)
        table2.insert(1, row)
        log(f"{STOCK_CONFIG}: {row['seconds']} s, chrF {row['chrf']}, "
            f"{row['identical_to_exact_ar']:.1%} of updates identical to the exact build's AR")

    # Tables 3–4 use KV-prefix reuse, so their baseline is AR with the same reuse (AR from scratch
    # would credit the reuse to the bias: β = 0 is greedy + reuse)
    ar_side = sum(ar_kv.sentence_seconds[:n_side])
    table3 = []
    for beta in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0):
        run = run_config(translator, Config(f"β={beta:g}", beta, reuse=True), side_src, lang)
        row = {"beta": beta, **scores(run, side_ref, lang)}
        row["speedup"] = round(ar_side / max(run.seconds, 1e-9), 2)
        table3.append(row)
        log(f"β={beta}: {row['seconds']} s, NE {row['ne']}")
    table4 = []
    for k in (3, 5):
        for mode in ("draft", "display"):
            cfg = Config(f"mask-{k} {mode}", 0.2, reuse=True, draft_mask_k=k if mode == "draft" else 0,
                         display_mask_k=k if mode == "display" else 0)
            run = run_config(translator, cfg, side_src, lang)
            row = {"mask_k": k, "mode": mode, **scores(run, side_ref, lang)}
            row["speedup"] = round(ar_side / max(run.seconds, 1e-9), 2)
            table4.append(row)
            log(f"mask-{k} {mode}: NE shown {row['ne_display']}")
    return {"lang": lang, "sentences": n_main, "side_sentences": n_side, "repeats": repeats, "table2": table2,
            "table3": table3,
            "table4": table4, "beta0": ident}


STOCK_CONFIG = "AR, stock llama-cpp-python build (prompt in one call; run once)"


def stock_ar(stock_dir: str, model: str, lang: str, n: int) -> dict:
    """Table 2's plain AR with the stock llama-cpp-python build in ``stock_dir``, timed once.

    A process loads one llama.cpp, so the stock build runs in a child process with ``stock_dir``
    first on its path (run first, so a broken build stops the benchmark before the long part);
    ``outputs`` (every update's tokens) is compared with the exact build's AR afterwards.
    """
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(stock_dir).resolve()), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "bench.translate", "--stock-child", "--model", model,
                           "--langs", lang, "--sentences", str(n)],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the stock llama-cpp-python run failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _stock_child(model: str, lang: str, n: int) -> int:
    """The child of :func:`stock_ar`: plain AR as the stock package runs it (weights repacked,
    the prompt evaluated in one call), printed as one JSON line."""
    import contextlib

    import llama_cpp

    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions, llama_runner
    from core.translate import translator as translator_module

    llama_runner._without_weight_repacking = contextlib.nullcontext  # the package's default loading
    translator_module.PROMPT_CHUNK = 512  # the whole prompt in one llama_decode call (n_batch)
    src = (NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()[:n]
    ref = (NTREX / REF_FILES[lang]).read_text(encoding="utf-8").splitlines()[:n]
    translator = LlamaTranslator(ModelStore().resolve(model), TranslatorOptions(target_lang=lang))
    translator.translate(src[0])  # warm-up, as for the other configurations
    run = run_config(translator, Config(STOCK_CONFIG, None), src, lang)
    translator.close()
    print(json.dumps({"config": STOCK_CONFIG, **scores(run, ref, lang), "outputs": run.outputs,
                      "llama_cpp": str(Path(llama_cpp.__file__).parent),
                      "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip()}))
    return 0


def summary_json(result: dict) -> dict:
    """The flat JSON object of the issue's acceptance check (first language)."""
    first = result["languages"][0]
    t2 = {row["config"]: row for row in first["table2"]}
    ar, ar_kv = t2["AR (re-translate from scratch)"], t2["AR + KV-prefix reuse"]
    ssbd, ssbd_kv = t2["SSBD β=0.2"], t2["SSBD β=0.2 + KV-prefix reuse"]
    return {
        "lang": first["lang"],
        "speedup_beta_0_2": ssbd["speedup"],
        "speedup_beta_0_2_kvreuse": ssbd_kv["speedup"],
        "speedup_ar_kvreuse": ar_kv["speedup"],
        "ne_ar": ar["ne"],
        "ne_ssbd": ssbd["ne"],
        "ne_display_mask3": ssbd["ne_display"],
        "a_d": ssbd["a_d"],
        "a_o": ssbd["a_o"],
        "chrf_ar": ar["chrf"],
        "chrf_ssbd": ssbd["chrf"],
        "beta0_identical": first["beta0"]["identical"],
        "beta0_identical_fraction": first["beta0"]["identical_fraction"],
        "beta0_divergences": first["beta0"]["divergences"],
        "machine": result["machine"],
        "model": result["model"],
    }


def markdown(result: dict, lang: dict, command: str) -> str:
    """The tables of one language, between markers that --write-docs replaces."""
    begin, end = _markers(lang["lang"])
    lines = [begin, f"Measured {result['date']} on {result['machine']}, model `{result['model']}`, "
             f"llama.cpp on the CPU. Reproduce: `{command}`", ""]
    lines += [f"**English → {lang['lang']}**, {lang['sentences']} NTREX sentences, lag-3 prefixes (Table 2); "
              f"each configuration run {lang.get('repeats', 1)} times, interleaved: seconds are the median "
              "(min–max). Speedup = seconds of AR from scratch / seconds (× AR+reuse: against AR with the same "
              "KV-prefix reuse); TPS ratio = output tokens per second / AR's (the SSBD paper's measure). "
              f"Tables 3–4 on the first {lang['side_sentences']} sentences, with KV-prefix reuse, against AR "
              "with KV-prefix reuse. The runtime is llama-cpp-python built with llamafile off and prompts fed in "
              "16-token chunks (bit-identical logits for KV reuse), for every configuration alike.", "",
              "| configuration | chrF | BLEU | NE | NE shown (mask-3) | A/D | A/O | TPS | seconds | speedup "
              "| × AR+reuse | TPS ratio |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in lang["table2"]:
        shown = f"{r['ne_display']:.3f}" if "SSBD β=0.2" in r["config"] else "–"
        ad = f"{r['a_d']:.3f}" if r["a_d"] is not None else "–"
        spread = f" ({r['seconds_min']}–{r['seconds_max']})" if "seconds_min" in r else ""
        lines.append(f"| {r['config']} | {r['chrf']} | {r['bleu']} | {r['ne']:.3f} | {shown} | {ad} | "
                     f"{r['a_o']:.3f} | {r['tps']} | {r['seconds']}{spread} | {r['speedup']}× | "
                     f"{r.get('speedup_vs_ar_kv', '–')}× | {r.get('tps_ratio', '–')} |")
    stock = next((r for r in lang["table2"] if r["config"] == STOCK_CONFIG), None)
    if stock is not None:
        lines += ["", f"The stock build (llama-cpp-python from PyPI as pip builds it: llamafile kernels and weight "
                  f"repacking on, each prompt in one call) is what exactness is measured against: its plain AR "
                  f"took {stock['seconds']} s, and {stock['identical_to_exact_ar']:.1%} of its updates are "
                  "token for token those of the exact build's AR (batch-dependent rounding changes greedy "
                  "tokens)."]
    b0 = lang["beta0"]
    ties = sum(d["near_tie"] for d in b0["divergences"])
    lines += ["", f"β = 0 vs greedy AR: {b0['identical_fraction']:.1%} of updates identical token for token; "
              f"{len(b0['divergences'])} divergences, {ties} of them near-ties (top-2 gap ≤ 0.001).", "",
              "| β | chrF | NE | A/D | A/O | speedup vs AR+reuse |", "|---:|---:|---:|---:|---:|---:|"]
    for r in lang["table3"]:
        ad = f"{r['a_d']:.3f}" if r["a_d"] is not None else "–"
        lines.append(f"| {r['beta']:g} | {r['chrf']} | {r['ne']:.3f} | {ad} | {r['a_o']:.3f} | {r['speedup']}× |")
    lines += ["", "| mask-k | where | chrF | NE of model output | NE shown | speedup vs AR+reuse |",
              "|---:|---|---:|---:|---:|---:|"]
    for r in lang["table4"]:
        shown = r["ne_display"] if r["mode"] == "display" else r["ne"]
        lines.append(f"| {r['mask_k']} | {'in the draft' if r['mode'] == 'draft' else 'display only'} | "
                     f"{r['chrf']} | {r['ne']:.3f} | {shown:.3f} | {r['speedup']}× |")
    lines.append(end)
    return "\n".join(lines)


def write_docs(blocks: dict[str, str]) -> None:
    """Replace (or add) each language's block in docs/BENCHMARKS.md, keeping the others."""
    text = DOCS.read_text(encoding="utf-8")
    if SECTION not in text:
        text = text.rstrip("\n") + f"\n\n{SECTION}\n"
    for lang, block in blocks.items():
        begin, end = _markers(lang)
        if begin in text:
            start, stop = text.index(begin), text.index(end) + len(end)
            text = text[:start] + block + text[stop:]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOCS.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench translate", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="25 sentences, English→German (under 10 minutes)")
    parser.add_argument("--model", default="gemma-3-270m", help="translation model: name, hf: reference or .gguf path")
    parser.add_argument("--langs", default=None, help="comma-separated targets (default de; de,ja,zh without --quick)")
    parser.add_argument("--sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each Table 2 configuration (median, spread)")
    parser.add_argument("--stock-llama", metavar="DIR",
                        help="a directory holding llama-cpp-python's stock build (pip install --target DIR "
                             "llama-cpp-python): its plain AR is timed once beside Table 2")
    parser.add_argument("--stock-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write the summary JSON object here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    if args.stock_child:
        return _stock_child(args.model, args.langs or "de", args.sentences or 25)
    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions

    langs = (args.langs or ("de" if args.quick else "de,ja,zh")).split(",")
    n_main = args.sentences or (25 if args.quick else 100)
    n_side = 4 if args.quick else max(1, n_main // 4)
    store = ModelStore()
    translator = LlamaTranslator(store.resolve(args.model), TranslatorOptions(target_lang=langs[0]))
    t0 = time.time()
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "model": args.model,
        "languages": [bench_language(translator, lang, n_main, n_side, args.repeats,
                                     (args.stock_llama, args.model) if args.stock_llama else None)
                      for lang in langs],
    }
    translator.close()
    result["wall_seconds"] = round(time.time() - t0, 1)
    command = (
        "sotto bench translate"
        + (" --quick" if args.quick else "")
        + (f" --langs {args.langs}" if args.langs else "")
        + (f" --sentences {args.sentences}" if args.sentences else "")
        + (f" --repeats {args.repeats}" if args.repeats != 3 else "")
        + (" --stock-llama DIR" if args.stock_llama else "")
        + ("" if args.model == "gemma-3-270m" else f" --model {args.model}")
        + " --write-docs"
    )
    blocks = {lang["lang"]: markdown(result, lang, command) for lang in result["languages"]}
    print("\n\n".join(blocks.values()))
    flat = summary_json(result)
    print(json.dumps({k: v for k, v in flat.items() if k != "beta0_divergences"}, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps({**flat, "full": result}, indent=2, ensure_ascii=False))
    if args.write_docs:
        write_docs(blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())

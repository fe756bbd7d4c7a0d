"""`sotto bench translate`: SSBD vs autoregressive re-translation on NTREX-128, lag-3 streaming.

Each source sentence is fed as growing prefixes of 3, 6, 9 … words and then in
full; every prefix is re-translated, with the previous translation as the
draft (SSBD) or from scratch (AR). All configurations run in one process, one
after the other, on the same model and runtime, so ratios are side by side.

Every SSBD row says where β applies (its bias scope, core.translate.translator.bias_rules):
``paper`` biases every draft token of every update, the finished sentence's too; the app's
default (read from core.settings.Settings: scope, β, KV reuse, lookup, clause pieces, mask-k) is
``final-exact`` at the time of writing: β only on the unfinished line, a finished sentence greedy.

Tables (shaped like the SSBD paper's):
  2 — the app's default, AR and SSBD β=0.2 (paper scope), with and without KV-prefix reuse: chrF,
      BLEU, NE, A/D, A/O, TPS, speedup (plus SSBD β=0 with the default's reuse and lookup setting,
      checked token for token against AR)
  3 — the β table: β 0, 0.1, 0.2, 0.3, 0.5, each the app's default with only β changed (its scope,
      KV reuse, display rules), against greedy AR with the same reuse: speed, NE shown beside AR's
      with the same display rules, shown partial translations later contradicted, and whether the
      row verifies (from β = 0.5 the draft is kept unchecked); with what a verification call costs
      against the greedy calls it replaces
  4 — mask-k 3 and 5, in the draft vs display-only (β=0.2, paper scope, with KV reuse)

``--quick`` (about 4 minutes on 2 cores) runs only what the default's claim needs, first the app's
default and AR with the same KV reuse (both repeated), then AR from scratch and the β = 0 check
(once each: their outputs are deterministic), on 12 sentences; no paper-scope rows, no Tables 3–4.
Its tables go to their own block of docs/BENCHMARKS.md (``translate-quick:LANG`` markers, in the
translation section), so a quick run never replaces the full run's tables.

With ``--stock-llama DIR`` (a directory holding llama-cpp-python installed from PyPI with its
default build, llamafile kernels and weight repacking on), plain AR is also timed once with that
build in a child process, each prompt evaluated in one call: what a user of the stock package would
run, so the tables show what the exact build costs.

``--finished`` runs instead a table of finished sentences only, English → German, each translated as the
app translates one (``sotto translate``'s path, core.translate.document): NTREX next to spoken text (short
Tatoeba utterances, TED talk transcripts, customer-support conversations: the tune splits of
/work/shared/data/gathered/spoken_mt; the held-out splits too with ``--heldout``, for the final report only;
``--sets`` picks sets by name), counting copies left in English, fragments and phrase loops
(core.translate.quality) beside chrF.

``--betas`` runs only Table 3, on 30 sentences (``--sentences N``), each configuration once
(``--repeats``), interleaved sentence by sentence; its JSON has one row per β under ``betas``
(keys ``beta``, ``verifies``, ``speedup_vs_ar_reuse``, …).

Usage: sotto bench translate [--quick] [--model NAME|PATH] [--langs de,ja,zh] [--stock-llama DIR]
                             [--json FILE] [--write-docs]
       sotto bench translate --betas [--sentences N] [--repeats N] [--langs de] [--json FILE] [--write-docs]
       sotto bench translate --finished [--heldout] [--sentences N] [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.machine import describe

ROOT = Path(__file__).resolve().parent.parent
NTREX = ROOT.parent / "shared" / "data" / "mt" / "ntrex128"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
REF_FILES = {"de": "newstest2019-ref.deu.txt", "ja": "newstest2019-ref.jpn.txt", "zh": "newstest2019-ref.zho-CN.txt"}
SECTION = "## Translation: SSBD against greedy re-translation"  # the heading as docs/BENCHMARKS.md has it
SPOKEN = ROOT.parent / "shared" / "data" / "gathered" / "spoken_mt"
# (name, split, English file, German file): NTREX first, then the spoken sets
FINISHED_SETS = (
    ("NTREX-128", "news", NTREX / "newstest2019-src.eng.txt", NTREX / "newstest2019-ref.deu.txt"),
    ("Tatoeba short", "tune", SPOKEN / "tatoeba_short_tune.en", SPOKEN / "tatoeba_short_tune.de"),
    ("TED tst2016", "tune", SPOKEN / "ted_tst2016.en", SPOKEN / "ted_tst2016.de"),
    ("BConTrasT chat", "tune", SPOKEN / "chat_tune.en", SPOKEN / "chat_tune.de"),
    ("Tatoeba short", "heldout", SPOKEN / "tatoeba_short_heldout.en", SPOKEN / "tatoeba_short_heldout.de"),
    ("TED tst2017", "heldout", SPOKEN / "ted_tst2017.en", SPOKEN / "ted_tst2017.de"),
    ("BConTrasT chat", "heldout", SPOKEN / "chat_heldout.en", SPOKEN / "chat_heldout.de"),
)
FINISHED_MARKERS = ("<!-- translate-finished:begin -->", "<!-- translate-finished:end -->")


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
    copy_run: int = 0  # the display also hides an unfinished translation from its first untranslated run on
    bias_final: bool = True
    bias_floor: float = 0.0
    bias_holdback: int | None = None
    pieces: bool = True  # a long sentence clause by clause (core.translate.clauses), as the app does
    lookup: bool = False  # lookup guesses from the source and the draft (core.translate.lookup)
    scope: str = "paper"  # the bias scope the fields above spell (for labels; AR and β = 0 ignore it)
    repeat: bool = True  # timed ``repeats`` times in Table 2 (False: once, where only the outputs matter)


@dataclass
class Run:
    """What one configuration produced over the sentences."""

    config: Config
    seconds: float = 0.0
    output_tokens: int = 0
    draft_tokens: int = 0
    accepted_tokens: int = 0
    evaluated_tokens: int = 0
    finals: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the sentences, as ``finals`` translate them
    outputs: list[list[int]] = field(default_factory=list)  # every update's tokens, in order
    gaps: list[list[float]] = field(default_factory=list)
    sentence_seconds: list[float] = field(default_factory=list)
    updates: list[list[tuple[str, str]]] = field(default_factory=list)  # per sentence: (source, translation)


def prefixes(sentence: str, lag: int = 3) -> list[str]:
    """Growing source prefixes, ``lag`` words at a time, ending with the whole sentence."""
    words = sentence.split()
    out = [" ".join(words[:i]) for i in range(lag, len(words), lag)]
    return out + [sentence]


def app_default() -> tuple[Config, dict]:
    """The app's default translation as ``core.settings.Settings()`` names it (engine, β, bias scope,
    KV-prefix reuse, clause pieces, caption mask-k): the :class:`Config` and the settings it was read from."""
    from core.captions.policy import CaptionPolicy
    from core.settings import Settings, TranslationEngineKind
    from core.translate.translator import bias_rules

    settings = Settings()
    tr, cap = settings.translation, settings.captions
    beta = tr.beta if tr.engine == TranslationEngineKind.SSBD else None
    read = {"engine": str(tr.engine), "beta": beta, "bias_scope": tr.bias_scope, "reuse_prefix": tr.reuse_prefix,
            "lookup": tr.lookup, "clause_pieces": tr.clause_pieces, "mask_k": cap.mask_k, "mask_mode": cap.mask_mode,
            "copy_run": CaptionPolicy().copy_run}
    kind = "AR" if beta is None else f"SSBD β={beta:g}, {tr.bias_scope} scope"
    name = (f"App default: {kind}" + (" + KV-prefix reuse" if tr.reuse_prefix else "")
            + (" + lookup" if tr.lookup else "") + ("" if tr.clause_pieces else ", whole sentences"))
    config = Config(name, beta, reuse=tr.reuse_prefix, draft_mask_k=cap.mask_k if cap.mask_mode == "draft" else 0,
                    display_mask_k=cap.mask_k if cap.mask_mode == "display" else 0, pieces=tr.clause_pieces,
                    copy_run=read["copy_run"], lookup=tr.lookup, scope=tr.bias_scope, **bias_rules(tr.bias_scope))
    return config, read


def run_config(translator, config: Config, sources: list[str], lang: str) -> Run:
    """Translate every prefix of every sentence with ``config``."""
    opts = translator.options
    opts.beta, opts.reuse_prefix, opts.draft_mask_k = config.beta, config.reuse, config.draft_mask_k
    opts.bias_final, opts.bias_floor, opts.bias_holdback = config.bias_final, config.bias_floor, config.bias_holdback
    opts.clause_pieces, opts.lookup = config.pieces, config.lookup
    translator.forget()  # no piece translated by an earlier configuration is free for this one
    run = Run(config)
    for sentence in sources:
        draft: list[int] = []
        t_sentence = 0.0
        steps = prefixes(sentence)
        updates = []
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
            updates.append((prefix, result.text))
        run.updates.append(updates)
        run.finals.append(result.text)
        run.sources.append(sentence)
        run.seconds += t_sentence
        run.sentence_seconds.append(t_sentence)
    return run


def contradicted(shown: str, final: str, lang: str) -> int:
    """Words of a shown partial translation that the sentence's final translation contradicts: every
    word of ``shown`` from the first one on that differs from the final translation's word at the same
    place (or has no word there), i.e. the shown words past their longest common prefix with ``final``.
    Words are NE's tokens (core.text.tokenize: whitespace words, CJK characters one by one), compared
    in lower case and without punctuation at their edges, so a comma or capital the final adds ("sagte"
    shown, "sagte," kept) contradicts nothing, while a word replaced, inserted or dropped before the
    end of what was shown contradicts it from there on (the reader saw a start the sentence does not
    have)."""
    from core.text import common_prefix_len, tokenize

    def norm(text: str) -> list[str]:
        return [w.strip(PUNCTUATION).casefold() for w in tokenize(text, lang)]

    words = norm(shown)
    return len(words) - common_prefix_len(words, norm(final))


PUNCTUATION = ".,;:!?¡¿\"'“”„‚‘’«»()[]-–—…。，、；：！？「」『』（）"


def display(run: Run, lang: str, mask_k: int, copy_run: int) -> dict:
    """What a display with these rules (display-only mask-k, untranslated runs: the app's
    core.captions.policy.shown_translation) would show of ``run``'s translations: NE shown (erased
    shown tokens per token of the finished translations; a finished sentence is shown whole), the
    share of the unfinished lines' tokens shown, and how often what was shown of an unfinished line
    is later contradicted by its sentence's final translation (:func:`contradicted`):
    ``contradicted_partials`` = shown partial translations (updates of an unfinished line that show
    at least one word) with at least one contradicted word / all shown partial translations;
    ``contradicted_words`` = contradicted words / shown words, over the same updates."""
    from core.captions.metrics import erasure
    from core.captions.policy import shown_translation
    from core.text import tokenize

    erased = total = shown = final_len = 0
    partials = partials_wrong = words_wrong = 0
    for updates in run.updates:
        before = None
        final = updates[-1][1]
        for i, (source, text) in enumerate(updates):
            if i == len(updates) - 1:
                now = tokenize(text, lang)
            else:
                seen = shown_translation(text, source, mask_k, lang, copy_run)
                now = tokenize(seen, lang)
                total += len(tokenize(text, lang))
                shown += len(now)
                if now:
                    wrong = contradicted(seen, final, lang)
                    partials += 1
                    partials_wrong += wrong > 0
                    words_wrong += wrong
            if before is not None:
                erased += erasure(before, now)
            before = now
        final_len += len(before or [])
    return {"ne_display": round(erased / max(final_len, 1), 3), "shown_share": round(shown / max(total, 1), 3),
            "shown_partials": partials, "contradicted_partials": round(partials_wrong / max(partials, 1), 3),
            "contradicted_words": round(words_wrong / max(shown, 1), 3)}


def display_rules(run: Run, lang: str, default: Config) -> list[dict]:
    """The default's translations as displays with other rules would show them: its mask-k alone,
    mask-6 alone, and mask-k with untranslated runs hidden (the app's, where ``copy_run`` is set)."""
    from core.captions.policy import COPY_RUN

    rules = [(default.display_mask_k, 0), (6, 0), (default.display_mask_k, default.copy_run or COPY_RUN)]
    return [{"mask_k": k, "copy_run": c, **display(run, lang, k, c)} for k, c in dict.fromkeys(rules)]


def profile(translator, configs: list[Config], sources: list[str], lang: str) -> list[dict]:
    """One more run of each of ``configs`` with every model call recorded
    (:class:`~core.translate.llama_runner.CallLog`): where the seconds go, by sentence (finished or
    not) and kind of call."""
    from core.translate.llama_runner import CallLog

    rows = []
    for cfg in configs:
        translator.runner.log = log = CallLog()
        try:
            run = run_config(translator, cfg, sources, lang)
        finally:
            translator.runner.log = None
        for (phase, kind), st in sorted(log.stats.items()):
            rows.append({"config": cfg.name, "sentence": phase, "kind": kind, "calls": st.calls, "tokens": st.tokens,
                         "rows": st.rows, "seconds": round(st.seconds, 2), "run_seconds": round(run.seconds, 2)})
    return rows


def broken(sources: list[str], finals: list[str], lang: str) -> dict:
    """How many finished translations a reader would call broken (core.translate.quality): a phrase
    said twice in a row (where the source does not), a fragment of the sentence, a copy left in English."""
    from core.translate.quality import is_fragment, phrase_loop

    pairs = list(zip(sources, finals, strict=True))
    return {
        "phrase_loops": sum(1 for s, t in pairs if phrase_loop(t) and not phrase_loop(s)),
        "fragments": sum(1 for s, t in pairs if is_fragment(s, t, lang)),
        "copies": sum(1 for s, t in pairs if copied(s, t)),
    }


def copied(source: str, translation: str) -> bool:
    """A copy left in the source language (core.translate.quality.is_copy), where the source has words to
    translate: a line without a letter ("972-555-5151.") is shown as it is (prompts.needs_no_translation)."""
    from core.translate.prompts import needs_no_translation
    from core.translate.quality import is_copy

    return not needs_no_translation(source) and is_copy(source, translation)


def scores(run: Run, refs: list[str], lang: str) -> dict:
    """chrF, BLEU, the streaming metrics and the broken translations of one run."""
    import sacrebleu

    tokenize = {"zh": "zh", "ja": "char"}.get(lang, "13a")
    return {
        "chrf": round(sacrebleu.corpus_chrf(run.finals, [refs]).score, 2),
        "bleu": round(sacrebleu.corpus_bleu(run.finals, [refs], tokenize=tokenize).score, 2),
        "ne": display(run, lang, 0, 0)["ne_display"],  # the model's output: nothing hidden
        **display(run, lang, run.config.display_mask_k, run.config.copy_run),
        "a_d": round(run.accepted_tokens / run.draft_tokens, 3) if run.draft_tokens else None,
        "a_o": round(run.accepted_tokens / max(run.output_tokens, 1), 3),
        "tps": round(run.output_tokens / max(run.seconds, 1e-9), 1),
        "seconds": round(run.seconds, 2),
        "evaluated_tokens": run.evaluated_tokens,
        **broken(run.sources, run.finals, lang),
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


AR_SCRATCH, AR_KV = "AR (re-translate from scratch)", "AR + KV-prefix reuse"
PAPER, PAPER_KV = "SSBD β=0.2, paper scope", "SSBD β=0.2 + KV-prefix reuse, paper scope"
BETA0 = "SSBD β=0 + KV reuse (lossless check)"


def table2_configs(default: Config, quick: bool) -> list[Config]:
    """Table 2's configurations in the order they run: the app's default and AR with the same KV
    reuse first; in ``quick`` AR from scratch and the β = 0 check once each, no paper-scope rows."""
    pieces = default.pieces  # every row translates clause by clause as the default does (or none does)
    # the display hides any engine's last words and untranslated runs alike: AR's NE shown with the same rules
    shown, copies = default.display_mask_k, default.copy_run
    ar_same = Config(AR_KV if default.reuse else AR_SCRATCH, None, reuse=default.reuse, pieces=pieces,
                     display_mask_k=shown, copy_run=copies)
    ar_other = Config(AR_SCRATCH if default.reuse else AR_KV, None, reuse=not default.reuse, pieces=pieces,
                      display_mask_k=shown, copy_run=copies, repeat=not quick)
    b0 = Config(BETA0, 0.0, reuse=True, pieces=pieces, lookup=default.lookup, repeat=not quick)
    if quick:
        return [default, ar_same, ar_other, b0]
    return [default, ar_same, ar_other, Config(PAPER, 0.2, display_mask_k=3, pieces=pieces),
            Config(PAPER_KV, 0.2, reuse=True, display_mask_k=3, pieces=pieces), b0]


def timed_runs(translator, configs: list[Config], sources: list[str], lang: str, repeats: int,
               log, calls: dict | None = None,
               by_sentence: bool = False) -> tuple[dict[str, Run], dict[str, list[float]]]:
    """Each configuration's run (the first) and its seconds in every run: configurations with ``repeat``
    run ``repeats`` times, interleaved (a slow moment of the machine hits all alike), the others once;
    ``by_sentence``: interleaved sentence by sentence (every configuration translates a sentence before
    the next sentence), so that a busy minute on a shared machine slows every configuration alike.
    The outputs are deterministic; a repeat that gives other tokens stops the benchmark. ``calls``: each
    configuration's first run is recorded call by call there (a CallLog by name, as ``--profile``)."""
    from core.translate.llama_runner import CallLog

    runs: dict[str, Run] = {}
    seconds: dict[str, list[float]] = {cfg.name: [] for cfg in configs}
    groups = [[s] for s in sources] if by_sentence else [sources]
    for rep in range(repeats):
        todo = [cfg for cfg in configs if cfg.repeat or not rep]
        this = {cfg.name: Run(cfg) for cfg in todo}
        if calls is not None and rep == 0:
            calls.update({cfg.name: CallLog() for cfg in todo})
        for g, group in enumerate(groups):
            if by_sentence and g and g % 10 == 0:
                log(f"run {rep + 1}: {g} of {len(groups)} sentences")
            for cfg in todo:
                translator.runner.log = calls[cfg.name] if calls is not None and rep == 0 else None
                try:
                    _extend(this[cfg.name], run_config(translator, cfg, group, lang))
                finally:
                    translator.runner.log = None
        for cfg in todo:
            run = this[cfg.name]
            seconds[cfg.name].append(run.seconds)
            log(f"{cfg.name}, run {rep + 1}: {run.seconds:.1f} s")
            if rep == 0:
                runs[cfg.name] = run
            elif run.outputs != runs[cfg.name].outputs:
                raise RuntimeError(f"{cfg.name}: a repeat produced other tokens (the runtime is not deterministic)")
    return runs, seconds


def _extend(run: Run, part: Run) -> None:
    """Add ``part`` (the same configuration on the next sentences) to ``run``."""
    for name in ("seconds", "output_tokens", "draft_tokens", "accepted_tokens", "evaluated_tokens"):
        setattr(run, name, getattr(run, name) + getattr(part, name))
    for name in ("finals", "sources", "outputs", "gaps", "sentence_seconds", "updates"):
        getattr(run, name).extend(getattr(part, name))


def block_ratios(base: Run, run: Run, blocks: int = 3) -> list[float]:
    """``base``'s seconds / ``run``'s over each of ``blocks`` consecutive runs of sentences (how much
    the ratio of the whole depends on which sentences and which minutes)."""
    n = len(run.sentence_seconds)
    edges = [round(i * n / blocks) for i in range(blocks + 1)]
    return [round(sum(base.sentence_seconds[a:b]) / max(sum(run.sentence_seconds[a:b]), 1e-9), 2)
            for a, b in zip(edges, edges[1:], strict=False) if b > a]


BETAS = (0.0, 0.1, 0.2, 0.3, 0.5)  # the β table (Table 3): exact, three that verify, the first that does not


def verifies(beta: float, floor: float = 0.0) -> str:
    """The β table's "verifies" cell: ``exact`` (β = 0: greedy decoding's tokens), ``yes`` (the model
    can refuse a draft token) or ``no`` (the draft is kept unchecked, core.translate.decoding
    .keeps_draft_unchecked)."""
    from core.translate.decoding import keeps_draft_unchecked

    if keeps_draft_unchecked(beta, floor):
        return "no"
    return "exact" if beta == 0 else "yes"


def beta_configs(default: Config, betas: tuple[float, ...] = BETAS) -> list[Config]:
    """The β table's configurations: greedy AR with the app's KV reuse (the baseline), then the app's
    default with only β changed (its bias scope, reuse, clause pieces, lookup and display rules)."""
    from dataclasses import replace

    ar = Config(AR_KV if default.reuse else AR_SCRATCH, None, reuse=default.reuse, pieces=default.pieces,
                lookup=default.lookup, display_mask_k=default.display_mask_k, copy_run=default.copy_run)
    return [ar] + [replace(default, name=f"SSBD β={b:g}, {default.scope} scope", beta=b, repeat=True)
                   for b in betas]


def beta_table(translator, default: Config, sources: list[str], refs: list[str], lang: str, repeats: int,
               log) -> dict:
    """Table 3, the β table: for each β of :data:`BETAS`, the app's default with that β against greedy AR
    with the same KV reuse, all run ``repeats`` times interleaved. Each row: ``beta``, ``verifies``,
    ``speedup_vs_ar_reuse`` (AR's median seconds / this one's) with each pair of runs' own ratio, chrF,
    NE of the model's output, NE shown and contradicted partial translations (:func:`display`, the
    app's display rules) beside AR's with the same rules, and how many of the updates are token for
    token AR's (β = 0 must be all)."""
    configs = beta_configs(default)
    calls: dict = {}
    runs, seconds = timed_runs(translator, configs, sources, lang, repeats, log, calls, by_sentence=True)
    ar_cfg = configs[0]
    ar_run = runs[ar_cfg.name]
    ar_s = statistics.median(seconds[ar_cfg.name])
    ar_run.seconds = ar_s
    ar = {"config": ar_cfg.name, "beta": None, "verifies": "–", **scores(ar_run, refs, lang),
          "calls": call_seconds(calls[ar_cfg.name]),
          "seconds_runs": [round(x, 2) for x in seconds[ar_cfg.name]], "speedup_vs_ar_reuse": 1.0}
    rows = []
    for cfg in configs[1:]:
        run = runs[cfg.name]
        run.seconds = statistics.median(seconds[cfg.name])
        same = identity(ar_run, run)
        row = {"beta": cfg.beta, "verifies": verifies(cfg.beta, cfg.bias_floor), "config": cfg.name,
               **scores(run, refs, lang),
               "speedup_vs_ar_reuse": round(ar_s / max(run.seconds, 1e-9), 2),
               "speedup_vs_ar_reuse_pairs": [round(a / max(b, 1e-9), 2)
                                             for a, b in zip(seconds[ar_cfg.name], seconds[cfg.name], strict=True)],
               "speedup_vs_ar_reuse_blocks": block_ratios(ar_run, run),
               "seconds_runs": [round(x, 2) for x in seconds[cfg.name]],
               "ne_display_ar": ar["ne_display"], "contradicted_partials_ar": ar["contradicted_partials"],
               "contradicted_words_ar": ar["contradicted_words"],
               "calls": call_seconds(calls[cfg.name]),
               "identical_to_ar": same["identical_fraction"], "finals_identical_to_ar": round(
                   sum(a == b for a, b in zip(ar_run.finals, run.finals, strict=True)) / max(len(run.finals), 1), 4)}
        rows.append(row)
        log(f"β={cfg.beta:g} ({row['verifies']}): {row['speedup_vs_ar_reuse']}× AR with the same reuse "
            f"(pairs {row['speedup_vs_ar_reuse_pairs']}), NE shown {row['ne_display']} vs {ar['ne_display']}, "
            f"contradicted {row['contradicted_partials']} vs {ar['contradicted_partials']}")
    return {"rows": rows, "ar": ar, "sentences": len(sources), "repeats": repeats, "scope": default.scope,
            "reuse": default.reuse, "display_mask_k": default.display_mask_k, "copy_run": default.copy_run,
            "best_verifying": best_verifying(rows), "verification_cost": verification_cost(translator, VERIFY_SOURCE)}


# a sentence of one clause piece whose greedy translation is longer than a verification call
VERIFY_SOURCE = "The meeting starts at nine and the minutes are sent out on Friday."


VERIFY_SIZES = (1, 2, 4, 7)  # draft tokens per verification call (7 = SMALL_CHUNK, the most per call)


def verification_cost(translator, source: str, sizes: tuple[int, ...] = VERIFY_SIZES, repeats: int = 5) -> list[dict]:
    """What checking n draft tokens costs against decoding them greedily, after ``source``'s real prompt,
    the draft being its real greedy translation: for each n, the median seconds of one verification call
    (n tokens, a full-vocabulary logit row for each: what SSBD runs below β = 0.5), of the acceptance
    test on those rows (core.translate.decoding's, at β = 0.2), of the same call with one row (the last:
    what a draft kept unchecked costs from β = 0.5), and of n one-token greedy calls. SSBD gains only
    where a verification call of n accepted tokens costs less than the n greedy calls it replaces."""
    from core.translate.decoding import accepts
    from core.translate.llama_runner import PROMPT_CHUNK, SMALL_CHUNK

    runner = translator.runner
    draft = translator.translate(source, final=True).tokens
    prompt = translator.prompt_tokens(source)
    sizes = tuple(n for n in sizes if n <= min(len(draft), SMALL_CHUNK))
    runner.truncate(0)
    runner.eval(prompt, chunk=PROMPT_CHUNK)
    base = len(prompt)

    def timed(call, *args, **kwargs):
        t0 = time.perf_counter()
        out = call(*args, **kwargs)
        seconds = time.perf_counter() - t0
        runner.truncate(base)
        return seconds, out

    def greedy_calls(tokens: list[int]) -> None:
        for t in tokens:
            runner.eval([t])

    rows = []
    for n in sizes:
        tokens = draft[:n]
        verify, check, one_row, greedy = [], [], [], []
        for _ in range(repeats):
            seconds, logits = timed(runner.eval, tokens, logits_from=0, chunk=SMALL_CHUNK)
            verify.append(seconds)
            t0 = time.perf_counter()
            for row, token in zip(logits, tokens, strict=True):
                accepts(row, token, 0.2)
            check.append(time.perf_counter() - t0)
            one_row.append(timed(runner.eval, tokens, chunk=SMALL_CHUNK)[0])
            greedy.append(timed(greedy_calls, tokens)[0])
        med = {k: statistics.median(v) for k, v in
               (("verify", verify), ("check", check), ("one_row", one_row), ("greedy", greedy))}
        rows.append({"tokens": n, "verify_ms": round(1e3 * med["verify"], 1), "check_ms": round(1e3 * med["check"], 1),
                     "one_row_ms": round(1e3 * med["one_row"], 1), "greedy_ms": round(1e3 * med["greedy"], 1),
                     "verify_vs_greedy": round((med["verify"] + med["check"]) / max(med["greedy"], 1e-9), 2)})
    runner.truncate(0)
    return rows


def verification_markdown(rows: list[dict]) -> list[str]:
    """The verification-cost table as Markdown lines."""
    lines = ["What checking a draft costs (`verification_cost`: after a real prompt, the median of 5; ms): one "
             "verification call of n draft tokens with a full-vocabulary logit row each, plus the acceptance test "
             "on those rows, against n one-token greedy calls; beside them the same call with one row (a draft "
             "kept unchecked, β ≥ 0.5). Verifying n tokens pays when (verify + test) / greedy < 1 and all n are "
             "accepted; each rejection also costs the greedy step that replaces it.", "",
             "| draft tokens n | verify call | acceptance test | one-row call | n greedy calls "
             "| (verify + test) / greedy |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['tokens']} | {r['verify_ms']} | {r['check_ms']} | {r['one_row_ms']} | {r['greedy_ms']} | "
                     f"{r['verify_vs_greedy']} |")
    return lines


def call_seconds(log) -> dict:
    """Where one run's model time went, by kind of call (core.translate.llama_runner.CallLog: one-token,
    verification, prompt), finished and unfinished sentences together: calls, tokens, logit rows, seconds."""
    out: dict[str, dict] = {}
    for (_, kind), st in log.stats.items():
        row = out.setdefault(kind, {"calls": 0, "tokens": 0, "rows": 0, "seconds": 0.0})
        row["calls"] += st.calls
        row["tokens"] += st.tokens
        row["rows"] += st.rows
        row["seconds"] = round(row["seconds"] + st.seconds, 2)
    return out


def best_verifying(rows: list[dict]) -> dict | None:
    """The fastest row that verifies (0 < β < 0.5), or None."""
    ok = [r for r in rows if r["verifies"] == "yes"]
    return max(ok, key=lambda r: r["speedup_vs_ar_reuse"]) if ok else None


def bench_language(translator, lang: str, n_main: int, n_side: int, repeats: int = 3,
                   stock: tuple[str, str] | None = None, quick: bool = False, with_profile: bool = False) -> dict:
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

    default, default_settings = app_default()
    table2_cfgs = table2_configs(default, quick)
    runs, seconds = timed_runs(translator, table2_cfgs, main_src, lang, repeats, log)
    ar, ar_kv = runs[AR_SCRATCH], runs[AR_KV]
    table2 = []
    for cfg in table2_cfgs:
        run = runs[cfg.name]
        run.seconds = statistics.median(seconds[cfg.name])
        row = {"config": cfg.name, "scope": cfg.scope if cfg.beta else None, "beta": cfg.beta,
               "reuse": cfg.reuse, "clause_pieces": cfg.pieces, "display_mask_k": cfg.display_mask_k,
               "copy_run": cfg.copy_run,
               "draft_mask_k": cfg.draft_mask_k, "runs": len(seconds[cfg.name]), **scores(run, main_ref, lang)}
        if len(seconds[cfg.name]) > 1:
            row["seconds_min"], row["seconds_max"] = round(min(seconds[cfg.name]), 2), round(max(seconds[cfg.name]), 2)
        row["seconds_runs"] = [round(x, 2) for x in seconds[cfg.name]]
        if len(seconds[cfg.name]) > 1 and len(seconds[AR_KV]) == len(seconds[cfg.name]):
            # run i of AR + reuse / run i of this one: the two ran one after the other, so a busy
            # moment of the machine slows both (the ratio of the medians mixes different moments)
            row["speedup_vs_ar_kv_pairs"] = [round(a / max(b, 1e-9), 2)
                                             for a, b in zip(seconds[AR_KV], seconds[cfg.name], strict=True)]
        table2.append(row)
        spread = f" ({row['seconds_min']}–{row['seconds_max']})" if "seconds_min" in row else ""
        log(f"{cfg.name}: {row['seconds']} s{spread}, chrF {row['chrf']}, NE {row['ne']}")
    order = {cfg.name: _table_order(cfg) for cfg in table2_cfgs}
    table2.sort(key=lambda r: order[r["config"]])
    ar_tps = next(r["tps"] for r in table2 if r["config"] == AR_SCRATCH)
    kv_tps = next(r["tps"] for r in table2 if r["config"] == AR_KV)
    for row in table2:
        row["speedup"] = round(ar.seconds / max(row["seconds"], 1e-9), 2)
        row["speedup_vs_ar_kv"] = round(ar_kv.seconds / max(row["seconds"], 1e-9), 2)
        row["tps_ratio"] = round(row["tps"] / max(ar_tps, 1e-9), 2)
        row["tps_ratio_vs_ar_kv"] = round(row["tps"] / max(kv_tps, 1e-9), 2)
    ident = identity(ar, runs[BETA0])
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
    t2 = {row["config"]: row for row in table2}
    d_row, base = t2[default.name], t2[AR_KV if default.reuse else AR_SCRATCH]
    headline = {
        "default_scope": default.scope if default.beta is not None else "ar",
        "default_settings": default_settings,
        "default_config": default.name,
        "speedup_default_vs_ar_reuse": d_row["speedup_vs_ar_kv" if default.reuse else "speedup"],
        "speedup_default_vs_ar_reuse_pairs": d_row.get("speedup_vs_ar_kv_pairs"),
        "speedup_default_vs_ar": d_row["speedup"],
        "chrf_default": d_row["chrf"],
        "chrf_ar": base["chrf"],
        "ne_display_default": d_row["ne_display"],
        "ne_default": d_row["ne"],
        "ne_ar": base["ne"],
        "ne_display_ar": base["ne_display"],
        "beta0_identical": ident["identical"],
        "batch_check_passed": getattr(getattr(translator, "runner", None), "batch_invariant", None),
        "display_rules": display_rules(runs[default.name], lang, default),
    }
    log(f"app default ({headline['default_scope']}): {headline['speedup_default_vs_ar_reuse']}× AR with the same "
        f"reuse, chrF {headline['chrf_default']} vs {headline['chrf_ar']}, NE shown {headline['ne_display_default']} "
        f"vs AR's NE {headline['ne_ar']}, β = 0 identical: {headline['beta0_identical']}")
    if with_profile:
        by_name = {cfg.name: cfg for cfg in table2_cfgs}
        headline["profile"] = profile(translator, [by_name[AR_KV], default], main_src, lang)
    if quick:
        return {"lang": lang, "sentences": n_main, "side_sentences": 0, "repeats": repeats, "quick": True,
                **headline, "table2": table2, "table3": None, "table4": [], "beta0": ident}

    # Table 3 (the β table) and Table 4 use KV-prefix reuse, so their baseline is AR with the same reuse
    # (AR from scratch would credit the reuse to the bias: β = 0 is greedy + reuse)
    ar_side = sum(ar_kv.sentence_seconds[:n_side])
    table3 = beta_table(translator, default, side_src, side_ref, lang, repeats, log)
    table4 = []
    for k in (3, 5):
        for mode in ("draft", "display"):
            cfg = Config(f"mask-{k} {mode}", 0.2, reuse=True, draft_mask_k=k if mode == "draft" else 0,
                         display_mask_k=k if mode == "display" else 0, pieces=default.pieces)
            run = run_config(translator, cfg, side_src, lang)
            row = {"mask_k": k, "mode": mode, **scores(run, side_ref, lang)}
            row["speedup"] = round(ar_side / max(run.seconds, 1e-9), 2)
            table4.append(row)
            log(f"mask-{k} {mode}: NE shown {row['ne_display']}")
    return {"lang": lang, "sentences": n_main, "side_sentences": n_side, "repeats": repeats, "quick": False,
            **headline, "table2": table2, "table3": table3, "table4": table4, "beta0": ident}


def _table_order(config: Config) -> int:
    """Table 2's row order (not the order they run in): AR, AR + reuse, paper scope, the app's default, β = 0."""
    return {AR_SCRATCH: 0, AR_KV: 1, PAPER: 2, PAPER_KV: 3, BETA0: 5}.get(config.name, 4)


QUICK_SENTENCES = 12


def bench_finished(translator, heldout: bool, n: int, log, sets: str | None = None) -> list[dict]:
    """Each set's first ``n`` sentences translated as finished ones, as the app translates a finished
    sentence with no unfinished line before it (and ``sotto translate`` each line): two rows per set,
    the first decode alone (what the app showed before the copy retry: its text is kept on the result)
    and the translation shown. chrF, BLEU, the broken ones (copies, fragments, loops) and model seconds
    per sentence (the second row's include the retries). ``sets``: comma-separated parts of set names
    (case aside), the others left out."""
    import sacrebleu

    from core.translate.numbers import invented_numbers
    from core.translate.quality import is_fragment

    rows = []
    for name, split, src_path, ref_path in FINISHED_SETS:
        if split == "heldout" and not heldout:
            continue
        if sets and not any(part.strip().lower() in name.lower() for part in sets.split(",")):
            continue
        if not src_path.is_file():
            log(f"{name} ({split}) is missing at {src_path}; left out")
            continue
        src = src_path.read_text(encoding="utf-8").splitlines()[:n]
        ref = ref_path.read_text(encoding="utf-8").splitlines()[:n]
        results = [translator.translate(line, None, final=True) for line in src]
        seconds = sum(r.seconds for r in results) / max(len(src), 1)
        first = [r.unsteered or r.text for r in results]
        shown = [r.text for r in results]
        for label, out in (("first decode", first), ("shown", shown)):
            counts = broken(src, out, "de")
            numbers = [[s, t] for s, t in zip(src, out, strict=True) if invented_numbers(s, t)]
            rows.append({"set": name, "split": split, "sentences": len(src), "output": label,
                         "chrf": round(sacrebleu.corpus_chrf(out, [ref]).score, 2),
                         "bleu": round(sacrebleu.corpus_bleu(out, [ref]).score, 2), **counts,
                         "made_up_numbers": len(numbers), "numbered": numbers,
                         "copy_share": round(counts["copies"] / max(len(src), 1), 4),
                         "retried": sum(r.unsteered is not None for r in results),
                         "seconds_per_sentence": round(seconds, 3) if label == "shown" else None,
                         "copied": [[s, t] for s, t in zip(src, out, strict=True) if copied(s, t)],
                         "fragmented": [[s, t] for s, t in zip(src, out, strict=True) if is_fragment(s, t, "de")]})
            log(f"{name} ({split}), {label}: chrF {rows[-1]['chrf']}, copies {counts['copies']}, fragments "
                f"{counts['fragments']}, loops {counts['phrase_loops']}, made-up numbers {len(numbers)}")
    return rows


def finished_markdown(result: dict, command: str) -> str:
    """The finished-sentence table (one row per set: the first decode → what is shown), between
    markers that --write-docs replaces."""
    begin, end = FINISHED_MARKERS
    lines = [begin, f"`{command}` — {result['date']}, {result['machine']}, model `{result['model']}`, English → "
             "German, each sentence finished as the app translates one (the path of `sotto translate`); spoken text: "
             "short Tatoeba utterances (CC-BY 2.0 FR), TED talk transcripts (IWSLT, CC-BY-NC-ND 3.0) and "
             "customer-support conversations (BConTrasT, WMT20 chat, CC-BY-SA 4.0) from "
             "`../shared/data/gathered/spoken_mt` (not in the project), the copy retry tuned on the tune splits. Each "
             "cell: the first decode (all the app showed before the copy retry and the halves) → what is shown now. "
             "Copies: "
             "mostly the source's words; fragments: under half the sentence; loops: a phrase said twice "
             "(core/translate/quality.py); numbers: sentences with a number the source never says "
             "(core/translate/numbers.py); retried: sentences the copy retry, the number retry or the halves changed; "
             "seconds: model time per sentence, retries included."
             + ("" if result.get("number_retry", True) else " The number retry off (`--no-number-retry`)."), "",
             "| set | split | sentences | copies | fragments | loops | numbers | chrF | BLEU | retried "
             "| s per sentence |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = result["finished"]
    for first, shown in zip(rows[::2], rows[1::2], strict=True):
        cells = [f"{first[k]} → {shown[k]}"
                 for k in ("copies", "fragments", "phrase_loops", "made_up_numbers", "chrf", "bleu")]
        lines.append(f"| {shown['set']} | {shown['split']} | {shown['sentences']} | {' | '.join(cells)} | "
                     f"{shown['retried']} | {shown['seconds_per_sentence']} |")
    lines.append(end)
    return "\n".join(lines)


def write_finished_docs(block: str) -> None:
    """Replace (or add, at the end of the translation section) the finished-sentence block."""
    begin, end = FINISHED_MARKERS
    text = DOCS.read_text(encoding="utf-8")
    if begin in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        if SECTION not in text:
            text = text.rstrip("\n") + f"\n\n{SECTION}\n"
        after = text.index(SECTION) + len(SECTION)
        nxt = text.find("\n## ", after)
        at = len(text) if nxt < 0 else nxt + 1
        text = text[:at].rstrip("\n") + "\n\n" + block + "\n\n" + text[at:]
    DOCS.write_text(text, encoding="utf-8")


def main_finished(args) -> int:
    """``--finished``: the finished-sentence table (see the module's docstring)."""
    from core.models import ModelStore
    from core.session.engines import create_translator
    from core.settings import Settings

    settings = Settings().with_value("translation.target", "de").with_value("translation.model", args.model)
    log = lambda msg: print(f"[finished] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    translator = create_translator(settings, ModelStore())
    assert translator is not None
    if args.copy_retries is not None:  # the copy retry's effect (0: off, as before it existed)
        translator.options.copy_retries = args.copy_retries
    if args.no_phrases:  # as before the set phrases were read off (the markers still are)
        translator.options.phrases = False
    if args.no_number_retry:  # as before the number retry
        translator.options.number_retry = False
    if args.whole_lines:  # as before lines were cut into sentences
        translator.options.sentence_by_sentence = False
    try:
        translator.translate("Hello.")  # warm-up (first-call allocations)
        rows = bench_finished(translator, args.heldout, args.sentences or 100, log, args.sets)
        result = {"date": time.strftime("%Y-%m-%d"), "machine": describe(), "model": args.model,
                  "heldout": args.heldout, "copy_retries": translator.options.copy_retries,
                  "phrases": translator.options.phrases, "number_retry": translator.options.number_retry,
                  "sentence_by_sentence": translator.options.sentence_by_sentence, "finished": rows}
    finally:
        translator.close()
    command = ("sotto bench translate --finished" + (" --heldout" if args.heldout else "")
               + (f" --sentences {args.sentences}" if args.sentences else "")
               + (f" --copy-retries {args.copy_retries}" if args.copy_retries is not None else "")
               + (f" --sets {args.sets}" if args.sets else "") + (" --no-phrases" if args.no_phrases else "")
               + (" --no-number-retry" if args.no_number_retry else "")
               + (" --whole-lines" if args.whole_lines else "")
               + ("" if args.model == "gemma-3-270m" else f" --model {args.model}") + " --write-docs")
    block = finished_markdown(result, command)
    print(block)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False))
    if args.write_docs:
        write_finished_docs(block)
    return 0


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
    import llama_cpp

    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions, llama_runner
    from core.translate import translator as translator_module

    llama_runner.REPACK_WEIGHTS = True  # the package's default loading
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


HEADLINE_KEYS = ("default_scope", "default_settings", "speedup_default_vs_ar_reuse",
                 "speedup_default_vs_ar_reuse_pairs", "speedup_default_vs_ar", "chrf_default", "chrf_ar",
                 "ne_display_default", "ne_default", "ne_ar", "ne_display_ar", "display_rules",
                 "beta0_identical", "batch_check_passed")


def summary_json(result: dict) -> dict:
    """The flat JSON object of the issue's acceptance check: the first language's figures at the top
    (the app's default against AR with the same KV reuse first), every language's in ``by_lang``."""
    first = result["languages"][0]
    t2 = {row["config"]: row for row in first["table2"]}
    ar, ar_kv = t2[AR_SCRATCH], t2[AR_KV]
    paper, paper_kv = t2.get(PAPER), t2.get(PAPER_KV)  # not in --quick
    return {
        "lang": first["lang"],
        **{k: first[k] for k in HEADLINE_KEYS},
        "by_lang": {lang["lang"]: {k: lang[k] for k in HEADLINE_KEYS} for lang in result["languages"]},
        "speedup_ar_kvreuse": ar_kv["speedup"],
        # SSBD as published (paper scope: β on every update, finished sentences too); None in --quick
        "speedup_beta_0_2": paper and paper["speedup"],
        "speedup_beta_0_2_kvreuse": paper_kv and paper_kv["speedup"],
        "ne_ssbd": paper and paper["ne"],
        "ne_display_mask3": paper and paper["ne_display"],
        "a_d": paper and paper["a_d"],
        "a_o": paper and paper["a_o"],
        "chrf_ssbd": paper and paper["chrf"],
        "chrf_ar_scratch": ar["chrf"],
        "beta0_identical_fraction": first["beta0"]["identical_fraction"],
        "betas": first["table3"]["rows"] if first["table3"] else None,  # one row per β (Table 3); None in --quick
        "beta0_divergences": first["beta0"]["divergences"],
        "profile": first.get("profile"),
        "quick": result.get("quick", False),
        "sentences": first["sentences"],
        "wall_seconds": result.get("wall_seconds"),
        "load_average": result.get("load_average"),
        "machine": result["machine"],
        "model": result["model"],
    }


def _markers_for(lang: dict) -> tuple[str, str]:
    return _quick_markers(lang["lang"]) if lang.get("quick") else _markers(lang["lang"])


def markdown(result: dict, lang: dict, command: str) -> str:
    """The tables of one language, between markers that --write-docs replaces."""
    begin, end = _markers_for(lang)
    d = lang["default_settings"]
    default = (f"`translation.bias_scope = {d['bias_scope']}`, β = {d['beta']}, KV-prefix reuse "
               f"{'on' if d['reuse_prefix'] else 'off'}, clause pieces {'on' if d['clause_pieces'] else 'off'}, "
               f"mask-{d['mask_k']} ({d['mask_mode']})"
               + (f", an unfinished translation shown up to its first untranslated run of {d['copy_run']} words "
                  "(core.captions.policy.shown_translation)" if d.get("copy_run") else ""))
    check = {True: "it passed in this run", False: "it failed in this run: β = 0 may differ where two tokens nearly "
             "tie", None: "not recorded"}[lang.get("batch_check_passed")]
    runs = (f"the app's default and AR with the same KV reuse run {lang.get('repeats', 1)} times, interleaved "
            "(seconds: median (min–max); × AR+reuse: the ratio of the medians, then each pair of runs' own "
            "ratio), AR from scratch and the β = 0 check once each (deterministic outputs)" if lang.get("quick") else
            f"each configuration run {lang.get('repeats', 1)} times, interleaved: seconds are the median (min–max)")
    lines = [begin, f"Measured {result['date']} on {result['machine']}, model `{result['model']}`, "
             f"llama.cpp on the CPU. Reproduce: `{command}`" + (f" ({result['wall_seconds']:.0f} s wall, model "
                                                                "load included)" if result.get("wall_seconds") else "")
             + (". Load average (1 min) before the model loaded / at the end: {} / {} (the benchmark itself adds "
                "about 2; more is other work on the 2 cores, which slows and scatters the seconds)"
                .format(*result["load_average"])
                if result.get("load_average") else ""), ""]
    lines += [f"**English → {lang['lang']}**, {lang['sentences']} NTREX sentences, lag-3 prefixes (Table 2); {runs}. "
              f"Scopes: the app's default is read from `core.settings.Settings()`: {default}; "
              "`paper` = β on every draft token of every update, the finished sentence's too. Speedup = seconds of AR "
              "from scratch / seconds (× AR+reuse: against greedy AR with the same KV-prefix reuse); TPS ratio = "
              "output tokens per second / AR's (the SSBD paper's measure); tokens evaluated = tokens run through the "
              "model, prompts included (machine-independent, unlike the seconds)"
              + ("" if lang.get("quick") else f". Tables 3–4 on the first {lang['side_sentences']} sentences, "
                 "with KV-prefix reuse, against AR with KV-prefix reuse (Table 4 in paper scope)")
              + ". The runtime is llama-cpp-python built with llamafile off, prompts fed in aligned 16-token chunks "
              "and drafts verified in calls of at most 7 tokens, for every configuration alike; β = 0 is identical to "
              "this build's greedy decoding where the check at model load passes (a 4-token call against one-token "
              f"decoding; {check}).", "",
              "| configuration | chrF | BLEU | NE | NE shown (mask-k) | A/D | A/O | TPS | tokens evaluated | seconds "
              "| speedup | × AR+reuse | TPS ratio |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in lang["table2"]:
        k = r.get("display_mask_k", 3 if "SSBD β=0.2" in r["config"] else 0)
        rules = f"mask-{k}" + (f", untranslated runs of {r['copy_run']}" if r.get("copy_run") else "")
        if "shown_share" in r:
            rules += f"; {r['shown_share']:.0%} of unfinished lines shown"
        shown = f"{r['ne_display']:.3f} ({rules})" if k else "–"
        ad = f"{r['a_d']:.3f}" if r["a_d"] is not None else "–"
        spread = f" ({r['seconds_min']}–{r['seconds_max']})" if "seconds_min" in r else ""
        vs_kv = f"{r.get('speedup_vs_ar_kv', '–')}×"
        if r.get("speedup_vs_ar_kv_pairs") and r["config"] != AR_KV:
            vs_kv += " (pairs: " + ", ".join(f"{x}×" for x in r["speedup_vs_ar_kv_pairs"]) + ")"
        name = f"**{r['config']}**" if r["config"].startswith("App default") else r["config"]
        lines.append(f"| {name} | {r['chrf']} | {r['bleu']} | {r['ne']:.3f} | {shown} | {ad} | "
                     f"{r['a_o']:.3f} | {r['tps']} | {r.get('evaluated_tokens', '–')} | {r['seconds']}{spread} | "
                     f"{r['speedup']}× | "
                     f"{vs_kv} | {r.get('tps_ratio', '–')} |")
    if lang.get("display_rules"):
        rules = "; ".join(f"mask-{r['mask_k']}" + (f" and untranslated runs of {r['copy_run']}" if r["copy_run"] else
                                                   " alone")
                          + f": {r['ne_display']:.3f} ({r['shown_share']:.0%} shown)" for r in lang["display_rules"])
        lines += ["", "The app's default's translations as other display rules would show them (NE shown; share "
                  f"of the unfinished lines' tokens shown): {rules}."]
    if all("fragments" in r for r in lang["table2"]):
        counts = "; ".join(f"{r['config']}: {r['phrase_loops']} / {r['fragments']} / {r['copies']}"
                           for r in lang["table2"] if r["config"] != STOCK_CONFIG)
        lines += ["", f"Broken finished translations of the {lang['sentences']} sentences (phrase said twice / "
                  f"fragment under half the sentence / copy left in English, core/translate/quality.py): {counts}."]
    stock = next((r for r in lang["table2"] if r["config"] == STOCK_CONFIG), None)
    if stock is not None:
        lines += ["", f"The stock build (llama-cpp-python from PyPI as pip builds it: llamafile kernels and weight "
                  f"repacking on, each prompt in one call) is what exactness is measured against: its plain AR "
                  f"took {stock['seconds']} s, and {stock['identical_to_exact_ar']:.1%} of its updates are "
                  "token for token those of the exact build's AR (batch-dependent rounding changes greedy "
                  "tokens)."]
    if lang.get("profile"):
        lines += ["", "Where the model time goes (`--profile`: one more run of each, every model call timed; "
                  "one-token = greedy decoding, verification = a draft's logit rows, prompt = tokens evaluated for "
                  "the last one's logits, a kept draft included):", "",
                  "| configuration | sentence | kind of call | calls | tokens evaluated | logit rows | seconds |",
                  "|---|---|---|---:|---:|---:|---:|"]
        for r in lang["profile"]:
            lines.append(f"| {r['config']} | {r['sentence']} | {r['kind']} | {r['calls']} | {r['tokens']} | "
                         f"{r['rows']} | {r['seconds']} |")
    b0 = lang["beta0"]
    ties = sum(d["near_tie"] for d in b0["divergences"])
    lines += ["", f"β = 0 vs greedy AR: {b0['identical_fraction']:.1%} of updates identical token for token; "
              f"{len(b0['divergences'])} divergences, {ties} of them near-ties (top-2 gap ≤ 0.001)."]
    if not lang["table3"] and not lang["table4"]:
        lines.append(end)
        return "\n".join(lines)
    if lang["table3"]:
        lines += ["", *beta_markdown(lang["table3"])]
    lines += ["", "| mask-k (β=0.2, paper scope) | where | chrF | NE of model output | NE shown "
              "| speedup vs AR+reuse |",
              "|---:|---|---:|---:|---:|---:|"]
    for r in lang["table4"]:
        shown = r["ne_display"] if r["mode"] == "display" else r["ne"]
        lines.append(f"| {r['mask_k']} | {'in the draft' if r['mode'] == 'draft' else 'display only'} | "
                     f"{r['chrf']} | {r['ne']:.3f} | {shown:.3f} | {r['speedup']}× |")
    lines.append(end)
    return "\n".join(lines)


VERIFIES = {"exact": "exact (greedy's tokens)", "yes": "yes", "no": "**no: draft kept unchecked**"}


def beta_markdown(table: dict) -> list[str]:
    """The β table (Table 3) as Markdown lines: one row per β, AR's first."""
    ar = table["ar"]
    rules = f"mask-{table['display_mask_k']}" + (f", untranslated runs of {table['copy_run']} hidden"
                                                 if table["copy_run"] else "")
    lines = [f"**The β table** ({table['sentences']} sentences; the app's default with only β changed: bias scope "
             f"`{table['scope']}`, KV-prefix reuse {'on' if table['reuse'] else 'off'}; each configuration run "
             f"{table['repeats']} time(s), interleaved sentence by sentence). × AR+reuse = seconds of greedy AR "
             "with the same reuse / seconds (the ratio of the medians; in brackets the ratio over each third of the "
             "sentences, then each repeat's own where there are several). NE shown and contradicted with "
             f"the app's display rules ({rules}), AR's with the same rules beside them (→). Contradicted: shown "
             "partial translations with a word the sentence's final translation does not keep at that place "
             "(bench.translate.contradicted). From β = 0.5 the bias accepts every draft token whatever the model "
             "says: the draft is kept unchecked, so such a row does not verify and its speed is not SSBD's.", "",
             "| β | verifies | chrF | NE | NE shown (AR →) | contradicted partials (AR →) | A/D "
             "| updates = AR's | seconds | × AR+reuse |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
             f"| AR + reuse | – | {ar['chrf']} | {ar['ne']:.3f} | {ar['ne_display']:.3f} | "
             f"{ar['contradicted_partials']:.1%} | – | 100% | {ar['seconds']} | 1.0× |"]
    for r in table["rows"]:
        ad = f"{r['a_d']:.3f}" if r["a_d"] is not None else "–"
        spread = r.get("speedup_vs_ar_reuse_blocks", []) + (r["speedup_vs_ar_reuse_pairs"]
                                                            if len(r["speedup_vs_ar_reuse_pairs"]) > 1 else [])
        pairs = ", ".join(f"{x}×" for x in spread)
        lines.append(f"| {r['beta']:g} | {VERIFIES[r['verifies']]} | {r['chrf']} | {r['ne']:.3f} | "
                     f"{r['ne_display_ar']:.3f} → {r['ne_display']:.3f} | {r['contradicted_partials_ar']:.1%} → "
                     f"{r['contradicted_partials']:.1%} | {ad} | {r['identical_to_ar']:.0%} | {r['seconds']} | "
                     f"**{r['speedup_vs_ar_reuse']}×** ({pairs}) |")
    if "calls" in ar:
        lines += ["", "Where the model time went (each configuration's first run, every call timed: "
                  "core.translate.llama_runner.CallLog): calls / tokens evaluated / seconds by kind of call "
                  "(one-token = greedy decoding, one thread; verification = a draft's tokens, a full-vocabulary row "
                  "each; prompt = tokens evaluated for one row: prompts, a draft kept unchecked).", "",
                  "| β | one-token | verification | prompt |", "|---:|---:|---:|---:|"]
        for label, r in [("AR + reuse", ar)] + [(f"{r['beta']:g}", r) for r in table["rows"]]:
            cells = [(lambda c: f"{c['calls']} / {c['tokens']} / {c['seconds']}" if c else "–")(r["calls"].get(kind))
                     for kind in ("one-token", "verification", "prompt")]
            lines.append(f"| {label} | {' | '.join(cells)} |")
    best = table.get("best_verifying")
    if best is not None:
        lines += ["", f"Fastest β that verifies: {best['beta']:g}, {best['speedup_vs_ar_reuse']}× greedy AR with the "
                  "same reuse."]
    if table.get("verification_cost"):
        lines += ["", *verification_markdown(table["verification_cost"])]
    return lines


def _quick_markers(lang: str) -> tuple[str, str]:
    return f"<!-- translate-quick:{lang}:begin -->", f"<!-- translate-quick:{lang}:end -->"


def write_docs(blocks: dict[str, str], quick: bool = False, markers=None) -> None:
    """Replace (or add) each language's block in docs/BENCHMARKS.md, keeping the others. A quick run's
    blocks (and a ``--betas`` run's: ``markers`` gives their begin and end for a language) have markers of
    their own, added at the end of the translation section, so they never replace the full run's tables."""
    text = DOCS.read_text(encoding="utf-8")
    if SECTION not in text:
        text = text.rstrip("\n") + f"\n\n{SECTION}\n"
    own = quick or markers is not None
    markers = markers or (_quick_markers if quick else _markers)
    for lang, block in blocks.items():
        begin, end = markers(lang)
        if begin in text:
            start, stop = text.index(begin), text.index(end) + len(end)
            text = text[:start] + block + text[stop:]
        elif own:  # before the heading that follows the translation section
            after = text.index(SECTION) + len(SECTION)
            nxt = text.find("\n## ", after)
            at = len(text) if nxt < 0 else nxt + 1
            text = text[:at].rstrip("\n") + "\n\n" + block + "\n\n" + text[at:]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOCS.write_text(text, encoding="utf-8")


BETAS_SENTENCES = 30
BETAS_MARKERS = ("<!-- translate-betas:{}:begin -->", "<!-- translate-betas:{}:end -->")


def main_betas(args) -> int:
    """``--betas``: only the β table (Table 3) and the verification cost, on the first ``--sentences``
    NTREX sentences (30 by default), each language; the JSON has one row per β (``betas``)."""
    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions

    langs = (args.langs or "de").split(",")
    n = args.sentences or BETAS_SENTENCES
    repeats = args.repeats or 1
    t0 = time.time()
    load_start = round(os.getloadavg()[0], 2)
    translator = LlamaTranslator(ModelStore().resolve(args.model), TranslatorOptions(target_lang=langs[0]))
    default, settings = app_default()
    src = (NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8").splitlines()[:n]
    tables = {}
    try:
        for lang in langs:
            ref = (NTREX / REF_FILES[lang]).read_text(encoding="utf-8").splitlines()[:n]
            translator.options.target_lang = lang
            translator.translate(src[0])  # warm-up (first-call allocations)
            log = lambda msg, lang=lang: print(f"[{lang}] {msg}", file=sys.stderr, flush=True)  # noqa: E731
            tables[lang] = beta_table(translator, default, src, ref, lang, repeats, log)
    finally:
        translator.close()
    result = {"date": time.strftime("%Y-%m-%d"), "machine": describe(), "model": args.model,
              "default_settings": settings, "wall_seconds": round(time.time() - t0, 1),
              "load_average": [load_start, round(os.getloadavg()[0], 2)], "by_lang": tables}
    command = ("sotto bench translate --betas" + (f" --langs {args.langs}" if args.langs else "")
               + (f" --sentences {args.sentences}" if args.sentences else "")
               + (f" --repeats {args.repeats}" if args.repeats else "")
               + ("" if args.model == "gemma-3-270m" else f" --model {args.model}")
               + (" --json FILE" if args.json else "") + (" --write-docs" if args.write_docs else ""))
    blocks = {}
    for lang, table in tables.items():
        begin, end = (m.format(lang) for m in BETAS_MARKERS)
        head = (f"`{command}` — {result['date']}, {result['machine']}, model `{args.model}`, English → {lang}, "
                f"NTREX lag-3 prefixes ({result['wall_seconds']:.0f} s wall; load average (1 min) before / after: "
                "{} / {}).".format(*result["load_average"]))
        blocks[lang] = "\n".join([begin, head, "", *beta_markdown(table), end])
    print("\n\n".join(blocks.values()))
    first = tables[langs[0]]
    flat = {"lang": langs[0], "betas": first["rows"], "ar": first["ar"], "best_verifying_beta":
            first["best_verifying"] and first["best_verifying"]["beta"],
            "default_beta": settings["beta"], "sentences": n, "repeats": repeats, **result}
    if args.json:
        Path(args.json).write_text(json.dumps(flat, indent=2, ensure_ascii=False))
    if args.write_docs:
        write_docs(blocks, markers=lambda lang: tuple(m.format(lang) for m in BETAS_MARKERS))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench translate", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="12 sentences, English→German, the app's default against AR only (about 5 minutes)")
    parser.add_argument("--model", default="gemma-3-270m", help="translation model: name, hf: reference or .gguf path")
    parser.add_argument("--langs", default=None, help="comma-separated targets (default de; de,ja,zh without --quick)")
    parser.add_argument("--sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None,
                        help="runs of each Table 2 and Table 3 configuration (median, spread; 3, in --betas 1; in "
                             "--quick only the app's default and AR with the same reuse repeat)")
    parser.add_argument("--stock-llama", metavar="DIR",
                        help="a directory holding llama-cpp-python's stock build (pip install --target DIR "
                             "llama-cpp-python): its plain AR is timed once beside Table 2")
    parser.add_argument("--stock-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true",
                        help="one more run of the app's default and AR with the same reuse, every model call timed "
                             "(where the seconds go)")
    parser.add_argument("--json", help="write the summary JSON object here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    parser.add_argument("--betas", action="store_true",
                        help="only the β table (β 0, 0.1, 0.2, 0.3, 0.5 with the app's other settings against "
                             "greedy AR with the same KV reuse) and what verification costs; 30 sentences, one run "
                             "each by default, interleaved sentence by sentence")
    parser.add_argument("--finished", action="store_true",
                        help="finished sentences only, English→German: NTREX and spoken text (Tatoeba, TED), with "
                             "copies, fragments and loops counted")
    parser.add_argument("--heldout", action="store_true",
                        help="with --finished: the held-out spoken sets too (for the final report only)")
    parser.add_argument("--sets", default=None,
                        help="with --finished: comma-separated parts of set names (ntrex, tatoeba, ted, chat)")
    parser.add_argument("--no-phrases", action="store_true",
                        help="with --finished: set phrases not read off (core.translate.translator.TranslatorOptions."
                             "phrases), as before the phrasebook")
    parser.add_argument("--no-number-retry", action="store_true",
                        help="with --finished: a finished translation with a number its source never says not "
                             "decoded again (core.translate.translator.TranslatorOptions.number_retry), as before "
                             "the number retry")
    parser.add_argument("--whole-lines", action="store_true",
                        help="with --finished: a line of several sentences translated whole, not sentence by "
                             "sentence (core.translate.translator.TranslatorOptions.sentence_by_sentence)")
    parser.add_argument("--copy-retries", type=int, default=None,
                        help="with --finished: decodes of a copy left in English (core.translate.translator."
                             "TranslatorOptions.copy_retries; 0: none, as before the copy retry)")
    args = parser.parse_args(argv)
    if args.betas:
        return main_betas(args)
    if args.finished:
        return main_finished(args)
    if args.stock_child:
        return _stock_child(args.model, args.langs or "de", args.sentences or 25)
    from core.models import ModelStore
    from core.translate import LlamaTranslator, TranslatorOptions

    langs = (args.langs or ("de" if args.quick else "de,ja,zh")).split(",")
    n_main = args.sentences or (QUICK_SENTENCES if args.quick else 100)
    n_side = 0 if args.quick else max(1, n_main // 4)
    repeats = args.repeats or 3
    store = ModelStore()
    t0 = time.time()
    load_start = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    translator = LlamaTranslator(store.resolve(args.model), TranslatorOptions(target_lang=langs[0]))
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": describe(),
        "model": args.model,
        "quick": args.quick,
        "languages": [bench_language(translator, lang, n_main, n_side, repeats,
                                     (args.stock_llama, args.model) if args.stock_llama else None, quick=args.quick,
                                     with_profile=args.profile)
                      for lang in langs],
    }
    translator.close()
    result["wall_seconds"] = round(time.time() - t0, 1)
    if load_start is not None:
        result["load_average"] = [load_start, round(os.getloadavg()[0], 2)]
    command = (
        "sotto bench translate"
        + (" --quick" if args.quick else "")
        + (f" --langs {args.langs}" if args.langs else "")
        + (f" --sentences {args.sentences}" if args.sentences else "")
        + (f" --repeats {args.repeats}" if args.repeats else "")
        + (" --stock-llama DIR" if args.stock_llama else "")
        + (" --profile" if args.profile else "")
        + (" --json FILE" if args.json else "")
        + ("" if args.model == "gemma-3-270m" else f" --model {args.model}")
        + " --write-docs"
    )
    blocks = {lang["lang"]: markdown(result, lang, command) for lang in result["languages"]}
    print("\n\n".join(blocks.values()))
    flat = summary_json(result)
    print(json.dumps({k: v for k, v in flat.items() if k not in ("beta0_divergences", "profile")}, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps({**flat, "full": result}, indent=2, ensure_ascii=False))
    if args.write_docs:
        write_docs(blocks, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())

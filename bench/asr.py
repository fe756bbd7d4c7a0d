"""Speculative ASR benchmark: drafter + verifier vs the verifier's own greedy decoding, side by side.

Configurations, all in one run on the same machine and runtime (PyTorch, CPU):

- ``verifier-ar``: the verifier's plain greedy decoding (one forward pass per token);
- ``spec``: speculative decoding (adaptive drafts, recycling) from scratch at every decode;
- ``spec+prev`` (streaming only): the previous update's transcript is the first draft;
- ``+tree``: the same with the two-pass sparse tree (the drafter's runner-up at its first
  unsure token, continued, verified in the same pass as the trunk with a tree attention mask);
- ``hf-generate`` / ``hf-assisted``: transformers' own ``generate`` on the verifier, plain and with
  ``assistant_model=`` the drafter (Universal Assisted Decoding, which maps between the two
  tokenizers), encoder included;
- ``faster-whisper``: the app's own engine (``FasterWhisperEngine``: CTranslate2 greedy in int8 on
  the CPU, the encoder reading the window plus padding, at least ``asr.encoder_seconds``, one pass,
  word timestamps) with the verifier's and the drafter's weights: what a user runs today.

Offline mode decodes each clip once (a clip over 30 s in pieces cut at quiet points, the same
pieces for every configuration); streaming mode re-decodes the growing window every 1 s of
audio (the first 30 s of each clip), as the streaming transcriber does. Encoders run once per window and
are shared, so decoder times compare decoding only; total times include the encoders each
configuration needs (verifier-ar: the verifier's alone; the speculative ones: both, or with the
lazy drafter the drafter's only when it drafted). JSON keys say what they divide:
``decoder_speedup_*`` (decoders only) and ``total_speedup_*`` (encoders and decoders).
Not yet like the app: these windows are untrimmed and unprompted, without word timestamps.

Usage: sotto bench asr [--quick] [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
BEGIN, END = "<!-- asr-spec:begin -->", "<!-- asr-spec:end -->"
QUICK_OFFLINE = ("jfk.flac", "librispeech_1089-134686-0000.flac", "librispeech_2412-153948-0000.flac",
                 "mfa_acoustic_corpus.wav")
QUICK_STREAMING = ("jfk.flac", "mfa_acoustic_corpus.wav")


def _clips(quick: bool) -> tuple[list[Path], list[Path]]:
    asr = sorted(
        p for p in (SHARED / "asr").iterdir() if p.suffix in (".wav", ".flac") and not p.name.startswith("stereo")
    )
    long = sorted((SHARED / "asr_long").glob("*.flac"))
    if quick:
        return [SHARED / "asr" / n for n in QUICK_OFFLINE], [SHARED / "asr" / n for n in QUICK_STREAMING]
    return asr + long, [p for p in asr if "librispeech" not in p.name] + long


def _windows(audio, longest: float = 30.0, shortest: float = 20.0) -> list:
    """Whisper-sized pieces of a recording: a clip over 30 s is cut at the quietest 0.1 s
    between 20 and 30 s into what is left (every configuration decodes the same pieces)."""
    import numpy as np

    pieces, rate, frame = [], 16000, 1600
    while len(audio) > longest * rate:
        lo, hi = int(shortest * rate), int(longest * rate)
        frames = audio[lo:hi][: (hi - lo) // frame * frame].reshape(-1, frame)
        cut = lo + int(np.argmin((frames ** 2).mean(axis=1))) * frame + frame // 2
        pieces.append(audio[:cut])
        audio = audio[cut:]
    return pieces + [audio]


def _reference(path: Path) -> str:
    text = path.with_suffix(".txt").read_text(encoding="utf-8")
    return " ".join(line for line in text.splitlines() if line.strip())


class _Divergences:
    def __init__(self) -> None:
        self.total = 0
        self.identical = 0
        self.tokens = 0
        self.tokens_same = 0
        self.notes: list[dict] = []

    def add(self, label: str, reference, result) -> None:
        self.total += 1
        ref, got = reference.tokens, result.tokens
        n = min(len(ref), len(got))
        first = next((i for i in range(n) if ref[i] != got[i]), n)
        self.tokens += max(len(ref), len(got))
        self.tokens_same += first if ref != got else len(ref)
        if ref == got:
            self.identical += 1
            return
        gap = reference.gaps[first] if first < len(reference.gaps) else None
        self.notes.append({"where": label, "token": first, "top2_gap": None if gap is None else round(gap, 5),
                           "verifier": reference.text, "spec": result.text})


def _generation_setup(verifier, drafter) -> tuple:
    """transformers' generate() needs Whisper's generation config (the converted folders carry
    none) and a tokenizer per model for assisted generation across tokenizers."""
    from transformers import WhisperTokenizerFast
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    for runner in (verifier, drafter):
        sp, gc = runner.special, runner.model.generation_config
        gc.is_multilingual = runner.multilingual
        gc.decoder_start_token_id = sp.sot
        gc.no_timestamps_token_id = sp.no_timestamps
        gc.forced_decoder_ids = None
        gc.suppress_tokens, gc.begin_suppress_tokens = runner.suppress, runner.suppress_begin
        if runner.multilingual:
            gc.lang_to_id = {f"<|{code}|>": token for code, token in sp.languages.items()}
            gc.task_to_id = {"transcribe": sp.transcribe, "translate": sp.transcribe - 1}
    return WhisperTokenizerFast.from_pretrained(str(verifier.path)), WhisperTokenizerFast.from_pretrained(
        str(drafter.path))


def _hf_generate(verifier, drafter, tokenizers, audio, assisted: bool) -> tuple[list[int], float]:
    """(text tokens, seconds) of transformers' greedy generate(), optionally assisted by the drafter."""
    import torch

    kwargs = {"input_features": verifier.features(audio), "max_new_tokens": 220, "do_sample": False,
              "num_beams": 1, "language": "en", "task": "transcribe"}
    if assisted:
        kwargs.update(assistant_model=drafter.model, tokenizer=tokenizers[0], assistant_tokenizer=tokenizers[1])
    t0 = time.perf_counter()
    with torch.inference_mode():
        out = verifier.model.generate(**kwargs)
    seconds = time.perf_counter() - t0
    return [t for t in out[0].tolist() if t < verifier.special.eot], seconds


def _tree_vs_batched_rows(verifier, audio) -> dict[str, float]:
    """ms for one verifier pass over a 16-token trunk plus an 8-token branch: as one sequence with a
    tree attention mask, against two batched rows that share (copy) the prefix cache."""
    import copy

    import torch

    from core.asr.speculative.calibration import best_ms
    from core.asr.speculative.tree import DraftTree

    enc = verifier.encode(audio)
    prompt = verifier.prompt()
    words = verifier.encode_text(" And so my fellow Americans ask not what your country can do for you ask what")
    trunk, branch = words[:16], words[:8] + verifier.encode_text(" dear friends and neighbours")[:8]
    tree = DraftTree.from_paths(trunk, [branch])
    state = verifier.start(enc)
    state.append(prompt)

    def tree_pass() -> None:
        state.append(tree.tokens, logits_from=0, parents=tree.parents)
        state.truncate(len(prompt))

    def batched_pass() -> None:
        cache = copy.deepcopy(state.cache)
        cache.self_attention_cache.batch_repeat_interleave(2)
        cache.cross_attention_cache.batch_repeat_interleave(2)
        ids = torch.tensor([trunk, branch + trunk[len(branch):]])
        with torch.inference_mode():
            out = verifier.model.model.decoder(input_ids=ids, encoder_hidden_states=enc.expand(2, -1, -1),
                                               past_key_values=cache, use_cache=True)
            verifier.model.proj_out(out.last_hidden_state)

    tree_pass(), batched_pass()  # warm up
    return {"tree_mask_ms": round(best_ms(tree_pass, 5), 1), "batched_rows_ms": round(best_ms(batched_pass, 5), 1),
            "nodes": len(tree)}


def run(quick: bool) -> dict:
    import numpy as np
    import torch

    from core.asr.speculative import SpeculativeDecoder, SpeculativeOptions, WhisperRunner, greedy_decode
    from core.audio import decode_file
    from core.captions import normalize_english, word_error_rate
    from core.models import ModelStore

    torch.set_num_threads(os.cpu_count() or 1)
    store = ModelStore()
    # Whisper's 30 s for the PyTorch configurations: transformers' generate() (the hf rows) reads 3000
    # frames; the faster-whisper rows run as the app runs them (its encoder rule: `sotto bench encoder`)
    drafter = WhisperRunner(store.resolve("whisper-tiny.en"), name="tiny.en", quantize=True, encoder_seconds=30.0)
    verifier = WhisperRunner(store.resolve("whisper-base"), name="base", encoder_seconds=30.0)
    spec = SpeculativeDecoder(drafter, verifier, SpeculativeOptions())
    spec_tree = SpeculativeDecoder(drafter, verifier, SpeculativeOptions(sparse_tree=True))
    tokenizers = _generation_setup(verifier, drafter)
    from core.asr.speculative.calibration import calibrated
    from core.paths import demo_sample

    calibration = calibrated(drafter, verifier, demo_sample())  # measured once per machine, then stored
    offline_clips, streaming_clips = _clips(quick)
    div = _Divergences()
    totals = {k: {"decoder_s": 0.0, "encoder_s": 0.0, "audio_s": 0.0, "passes": 0, "drafter_s": 0.0,
                  "verifier_s": 0.0} for k in ("verifier-ar", "spec", "spec+tree", "faster-whisper-base",
                                               "faster-whisper-tiny.en", "hf-generate", "hf-assisted")}
    wer = {k: [] for k in totals}
    accepted = proposed = rounds = 0
    recycled_accepted = recycled_proposed = 0
    branch_accepted = branch_proposed = tree_rounds = 0
    assisted_same = assisted_total = 0

    from core.asr import FasterWhisperEngine

    fw = {"faster-whisper-base": FasterWhisperEngine(store.resolve("whisper-base")),
          "faster-whisper-tiny.en": FasterWhisperEngine(store.resolve("whisper-tiny.en"))}
    for path in offline_clips:
        texts: dict[str, list[str]] = {k: [] for k in totals}
        for n_window, audio in enumerate(_windows(decode_file(path))):
            seconds = len(audio) / 16000
            where = f"{path.name}#{n_window}"
            t0 = time.perf_counter()  # each configuration is charged the encoders it needs
            venc = verifier.encode(audio)
            venc_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            encs = (venc, drafter.encode(audio))
            enc_s = venc_s + time.perf_counter() - t0
            ref = greedy_decode(verifier, None, encoder_output=encs[0])
            res = spec.decode(None, encoder_outputs=encs)
            tree = spec_tree.decode(None, encoder_outputs=encs)
            div.add(f"offline/{where}", ref, res)
            div.add(f"offline+tree/{where}", ref, tree)
            for key, r in (("verifier-ar", ref), ("spec", res), ("spec+tree", tree)):
                t = totals[key]
                t["decoder_s"] += r.stats.decoder_seconds
                t["encoder_s"] += venc_s if key == "verifier-ar" else enc_s  # verifier-ar: no drafter
                t["audio_s"] += seconds
                t["passes"] += r.stats.verifier_passes
                t["drafter_s"] += r.stats.drafter_seconds
                t["verifier_s"] += r.stats.verifier_seconds
                texts[key].append(r.text)
            accepted += res.stats.draft_accepted
            proposed += res.stats.draft_proposed
            recycled_accepted += res.stats.recycled_accepted
            recycled_proposed += res.stats.recycled_proposed
            rounds += res.stats.rounds
            branch_accepted += tree.stats.branch_accepted
            branch_proposed += tree.stats.branch_proposed
            tree_rounds += tree.stats.tree_rounds
            for key, assisted in (("hf-generate", False), ("hf-assisted", True)):
                tokens, hf_seconds = _hf_generate(verifier, drafter, tokenizers, audio, assisted)
                totals[key]["decoder_s"] += hf_seconds  # encoder + decoder, as generate() runs both
                totals[key]["audio_s"] += seconds
                texts[key].append(verifier.decode_text(tokens))
                if assisted:
                    assisted_total += 1
                    assisted_same += tokens == ref.tokens
            for key, model in fw.items():
                t0 = time.perf_counter()
                texts[key].append(model.transcribe(audio, language="en").text)
                totals[key]["decoder_s"] += time.perf_counter() - t0  # encoder + decoder: CT2 has no split
                totals[key]["audio_s"] += seconds
        reference = normalize_english(_reference(path))
        for key, parts in texts.items():
            wer[key].append(word_error_rate(reference, normalize_english(" ".join(parts))))

    # streaming: re-decode the growing window every 1 s (first 30 s of each clip)
    keys = ("verifier-ar", "spec", "spec+prev", "spec+prev+lazy", "spec+prev+lazy+tree")
    stream = {k: {"decoder_s": 0.0, "passes": 0, "updates": 0, "drafter_s": 0.0, "verifier_s": 0.0,
                  "encoder_s": 0.0} for k in keys}
    stream_fw = 0.0  # faster-whisper base re-decoding each window, encoder included
    lazy = calibration.lazy_drafter
    decoders = {"spec": spec, "spec+prev": SpeculativeDecoder(drafter, verifier, SpeculativeOptions(lazy_drafter=0)),
                "spec+prev+lazy": SpeculativeDecoder(drafter, verifier, SpeculativeOptions(lazy_drafter=lazy)),
                "spec+prev+lazy+tree": SpeculativeDecoder(drafter, verifier, SpeculativeOptions(
                    lazy_drafter=lazy, sparse_tree=True))}
    prev_accepted = prev_proposed = 0
    for path in streaming_clips:
        audio = decode_file(path)[: 30 * 16000]
        previous = {k: [] for k in keys}
        for end in range(16000, len(audio) + 1, 16000):
            window = audio[:end]
            t0 = time.perf_counter()
            venc = verifier.encode(window)
            venc_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            denc = drafter.encode(window)
            denc_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            fw["faster-whisper-base"].transcribe(window, language="en")
            stream_fw += time.perf_counter() - t0
            results = {"verifier-ar": greedy_decode(verifier, None, encoder_output=venc)}
            for key, dec in decoders.items():
                if key == "spec":
                    results[key] = dec.decode(None, encoder_outputs=(venc, denc))
                elif "lazy" in key:  # the drafter's encoder runs (and is timed) only if it drafts
                    results[key] = dec.decode(window, encoder_outputs=(venc, None), previous_tokens=previous[key])
                else:
                    results[key] = dec.decode(None, encoder_outputs=(venc, denc), previous_tokens=previous[key])
                previous[key] = results[key].tokens
                div.add(f"stream:{key}/{path.name}@{end // 16000}s", results["verifier-ar"], results[key])
            for key, r in results.items():
                t = stream[key]
                t["decoder_s"] += r.stats.decoder_seconds
                t["drafter_s"] += r.stats.drafter_seconds
                t["verifier_s"] += r.stats.verifier_seconds
                t["encoder_s"] += venc_s + (r.stats.encoder_seconds if "lazy" in key else
                                            denc_s if key != "verifier-ar" else 0.0)
                t["passes"] += r.stats.verifier_passes
                t["updates"] += 1
            prev_accepted += results["spec+prev"].stats.previous_accepted
            prev_proposed += results["spec+prev"].stats.previous_proposed

    ar = totals["verifier-ar"]
    sp = totals["spec"]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, {platform.platform()}",
        "drafter": "whisper-tiny.en",
        "verifier": "whisper-base",
        "offline_clips": [p.name for p in offline_clips],
        "streaming_clips": [p.name for p in streaming_clips],
        "identical_fraction": round(div.identical / div.total, 4),
        "identical_token_fraction": round(div.tokens_same / max(1, div.tokens), 4),
        "decodes_compared": div.total,
        "divergences": div.notes,
        "decoder_speedup_streaming_spec_prev_vs_verifier_ar": round(
            stream["verifier-ar"]["decoder_s"] / stream["spec+prev"]["decoder_s"], 3
        ),
        "streaming_decoder_cost_vs_redecode": round(
            stream["spec+prev"]["decoder_s"] / stream["verifier-ar"]["decoder_s"], 3
        ),
        "decoder_speedup_offline_spec_vs_verifier_ar": round(ar["decoder_s"] / sp["decoder_s"], 3),
        "decoder_speedup_offline_tree_vs_verifier_ar": round(ar["decoder_s"] / totals["spec+tree"]["decoder_s"], 3),
        "total_speedup_streaming_lazy_vs_verifier_ar": round(
            (stream["verifier-ar"]["decoder_s"] + stream["verifier-ar"]["encoder_s"])
            / (stream["spec+prev+lazy"]["decoder_s"] + stream["spec+prev+lazy"]["encoder_s"]),
            3,
        ),
        "lazy_drafter": lazy,
        "branch_acceptance_rate": round(branch_accepted / branch_proposed, 4) if branch_proposed else None,
        "tree_rounds": tree_rounds,
        "tree_verification": _tree_vs_batched_rows(verifier, decode_file(offline_clips[0])),
        "total_speedup_hf_assisted_vs_hf_generate": round(
            totals["hf-generate"]["decoder_s"] / totals["hf-assisted"]["decoder_s"], 3
        ),
        "hf_assisted_identical_fraction": round(assisted_same / assisted_total, 4) if assisted_total else None,
        "total_speedup_offline_spec_vs_faster_whisper_base": round(
            totals["faster-whisper-base"]["decoder_s"] / (sp["decoder_s"] + sp["encoder_s"]), 3
        ),
        "wer_spec": round(float(np.mean(wer["spec"])), 4),
        "wer_verifier_ar": round(float(np.mean(wer["verifier-ar"])), 4),
        "wer_faster_whisper_base": round(float(np.mean(wer["faster-whisper-base"])), 4),
        "wer_faster_whisper_tiny_en": round(float(np.mean(wer["faster-whisper-tiny.en"])), 4),
        "wer": {k: round(float(np.mean(v)), 4) for k, v in wer.items()},
        "acceptance_rate": round(accepted / proposed, 4) if proposed else None,
        "recycled_acceptance_rate": round(recycled_accepted / recycled_proposed, 4) if recycled_proposed else None,
        "previous_transcript_acceptance_rate": round(prev_accepted / prev_proposed, 4) if prev_proposed else None,
        "mean_accepted_per_round": round((accepted + recycled_accepted) / rounds, 3) if rounds else None,
        "offline": totals,
        "streaming": stream,
        "streaming_faster_whisper_base_s": round(stream_fw, 2),
        "total_speedup_streaming_lazy_vs_faster_whisper_base": round(
            stream_fw / (stream["spec+prev+lazy"]["decoder_s"] + stream["spec+prev+lazy"]["encoder_s"]), 3
        ),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "calibration": {
            "threshold": calibration.threshold,
            "max_draft": calibration.max_draft,
            "lazy_drafter": calibration.lazy_drafter,
            "drafter_encoder_ms": calibration.drafter_encoder_ms,
            "drafter_step_ms": calibration.drafter_step_ms,
            "verifier_pass_ms": calibration.verifier_pass_ms,
            "decoder_ms_on_demo": calibration.decoder_ms,
        },
    }
    return result


def markdown(r: dict) -> str:
    off, st = r["offline"], r["streaming"]
    audio = off["verifier-ar"]["audio_s"]

    def per_s(x: float) -> str:
        return f"{x / audio:.3f}"

    lines = [
        f"Machine: {r['machine']}. Drafter {r['drafter']}, verifier {r['verifier']} (both bundled, converted "
        "from CTranslate2 once). Peak RSS {:.0f} MB.".format(r["peak_rss_mb"]),
        "",
        f"Offline ({len(r['offline_clips'])} clips, {audio:.0f} s of audio; "
        "decoder and encoder seconds per audio second):",
        "",
        "| configuration | decoder s/s | encoder s/s | verifier passes | drafter : verifier time | WER |",
        "|---|---|---|---|---|---|",
    ]
    for key in ("verifier-ar", "spec", "spec+tree"):
        t = off[key]
        split = f"{t['drafter_s']:.1f} : {t['verifier_s']:.1f} s"
        wer = r["wer_verifier_ar"] if key == "verifier-ar" else r["wer"][key]
        lines.append(
            f"| {key} (PyTorch) | {per_s(t['decoder_s'])} | {per_s(t['encoder_s'])} | {t['passes']} | {split} "
            f"| {wer:.3f} |"
        )
    for key, label in (("hf-generate", "transformers generate() on the verifier"),
                       ("hf-assisted", "transformers generate(assistant_model=drafter)")):
        lines.append(f"| {key} ({label}, encoder+decoder) | {per_s(off[key]['decoder_s'])} | – | – | – | "
                     f"{r['wer'][key]:.3f} |")
    for key, w in (("faster-whisper-base", r["wer_faster_whisper_base"]),
                   ("faster-whisper-tiny.en", r["wer_faster_whisper_tiny_en"])):
        lines.append(f"| {key} (CTranslate2, encoder+decoder) | {per_s(off[key]['decoder_s'])} | – | – | – | {w:.3f} |")
    n = st["verifier-ar"]["updates"]
    lines += [
        "",
        f"Streaming ({len(r['streaming_clips'])} clips, {n} updates, window re-decoded every 1 s; seconds; "
        f"total = encoders + decoder; lazy drafter = {r['lazy_drafter']} tokens):",
        "",
        "| configuration | decoder s | drafter : verifier s | encoders s | total s | verifier passes "
        "| decoder vs verifier greedy | total vs verifier greedy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = st["verifier-ar"]["decoder_s"]
    base_total = base + st["verifier-ar"]["encoder_s"]
    for key, t in st.items():
        total = t["decoder_s"] + t["encoder_s"]
        lines.append(f"| {key} | {t['decoder_s']:.1f} | {t['drafter_s']:.1f} : {t['verifier_s']:.1f} | "
                     f"{t['encoder_s']:.1f} | {total:.1f} | {t['passes']} | {base / t['decoder_s']:.2f}× | "
                     f"{base_total / total:.2f}× |")
    lines.append(
        f"| faster-whisper base (CTranslate2) | – | – | – | {r['streaming_faster_whisper_base_s']:.1f} | – | – "
        f"| {base_total / r['streaming_faster_whisper_base_s']:.2f}× |"
    )
    lines += [
        "",
        f"Identical to the verifier's greedy output: {r['identical_fraction']:.3f} of {r['decodes_compared']} decodes "
        f"({r['identical_token_fraction']:.4f} of tokens). Draft acceptance {r['acceptance_rate']}, recycled drafts "
        f"{r['recycled_acceptance_rate']}, previous transcript {r['previous_transcript_acceptance_rate']}; "
        f"mean accepted per round {r['mean_accepted_per_round']}.",
        "",
        f"Sparse tree: {r['tree_rounds']} offline rounds had a branch; branch tokens accepted "
        f"{r['branch_acceptance_rate']}. One verifier pass over a 16-token trunk and an 8-token branch "
        f"({r['tree_verification']['nodes']} nodes): tree attention mask {r['tree_verification']['tree_mask_ms']} ms, "
        f"two batched rows sharing the prefix cache {r['tree_verification']['batched_rows_ms']} ms.",
        "",
        f"transformers' assisted generation (tiny.en assisting base across tokenizers): "
        f"{r['total_speedup_hf_assisted_vs_hf_generate']:.2f}× its own plain generate(); identical tokens in "
        f"{r['hf_assisted_identical_fraction']} of clips.",
    ]
    c = r["calibration"]
    lines += [
        "",
        f"This machine's calibration (stored; the engine uses it when `asr.calibrate` is on): threshold "
        f"{c['threshold']}, longest draft {c['max_draft']}, lazy drafter {c['lazy_drafter']} tokens (drafter encoder "
        f"{c['drafter_encoder_ms']} ms); drafter step {c['drafter_step_ms']} ms; verifier pass "
        + ", ".join(f"{k} tok {v} ms" for k, v in c["verifier_pass_ms"].items()) + ". The tables above use the "
        "paper's defaults (0.4, 24) and the calibrated lazy drafter.",
    ]
    for d in r["divergences"]:
        lines.append(f"- divergence {d['where']} at token {d['token']}, top-2 gap {d['top2_gap']}: "
                     f"“{d['verifier']}” vs “{d['spec']}”")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench asr", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 clips offline, 2 streaming (under 10 minutes)")
    parser.add_argument("--json", help="write the results as one JSON object here")
    parser.add_argument("--write-docs", action="store_true", help="update the table in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    result = run(args.quick)
    block = markdown(result)
    print(block)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.write_docs:
        from .docs import replace_block

        replace_block(BEGIN, END, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())

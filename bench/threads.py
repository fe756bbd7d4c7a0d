"""`sotto bench threads`: what threads that wait cost the speech models (how core.compute sets them).

Each setting runs in a process of its own (the libraries read these variables when they load):
tiny.en and base decode 8 s windows of the shared reading (int8, the app's encoder rule, word
timestamps, a prompt) alternating with Gemma 3 270M calls, as the app's models take turns at the
compute gate: per window a tiny.en decode, 15 one-token Gemma calls, a base decode, a 24-token Gemma
call, then a 50 ms pause (its CPU: threads left spinning after the calls). Rounds over the settings
are interleaved; each figure is the median over rounds (min–max spread) of the mean per call: wall
ms and CPU ms (every thread of the process, spinning helpers included).

Settings: the app's (what core.compute sets: OpenBLAS's threads sleep as soon as a product is done,
OpenMP threads spin briefly before they sleep); the one before it (OpenMP threads sleep at once,
OpenBLAS's spin for 2^28 cycles, its default); each change alone; one OpenBLAS thread instead (as
cheap, but it rounds the mel features differently); and the app's with the speech models on one
thread.

Usage: sotto bench threads [--rounds N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READING = ROOT.parent / "shared" / "data" / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac"
WAITING = ("OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
# name: (environment, speech model threads (0: the app's, every core))
SETTINGS: dict[str, tuple[dict[str, str], int]] = {
    "the app's (BLAS threads sleep at once, OpenMP spins briefly)": ({}, 0),
    "before (passive waiting, BLAS threads spin ~0.1 s)": ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0",
                                                            "OPENBLAS_THREAD_TIMEOUT": "28"}, 0),
    "passive waiting, BLAS threads sleep at once": ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"}, 0),
    "the app's with one BLAS thread (other features)": ({"OPENBLAS_NUM_THREADS": "1"}, 0),
    "the app's, speech models on one thread": ({}, 1),
}
PROMPT = ("the invention of movable metal letters in the middle of the fifteenth century may justly be "
          "considered as the invention of the art of printing.")
STARTS = (20, 50, 80, 110, 140)  # seconds into the reading


def child(threads: int, rounds: int) -> dict:
    """One setting's process: per round, the mean wall and CPU ms per call of each kind."""
    from core.asr import FasterWhisperEngine
    from core.audio import decode_file
    from core.models import ModelStore
    from core.translate.llama_runner import LlamaRunner

    store = ModelStore()
    audio = decode_file(READING)
    windows = [audio[s * 16000:(s + 8) * 16000] for s in STARTS]
    tiny = FasterWhisperEngine(store.resolve("whisper-tiny.en"), cpu_threads=threads)
    base = FasterWhisperEngine(store.resolve("whisper-base"), cpu_threads=threads)
    gguf = Path(store.resolve("gemma-3-270m"))
    gguf = gguf if gguf.is_file() else next(gguf.glob("*.gguf"))
    llm = LlamaRunner(gguf)
    tokens = llm.tokenize("Translate into German: " + PROMPT, add_bos=True)
    llm.eval(tokens)
    n = len(llm.tokens)

    def one_token():
        for _ in range(15):
            llm.truncate(n)
            llm.eval(tokens[5:6])

    def batch():
        llm.truncate(n)
        llm.eval(tokens[5:29])

    kinds = {"tiny.en decode": None, "Gemma 15 one-token calls": one_token, "base decode": None,
             "Gemma 24-token call": batch}
    out: list[dict] = []
    for r in range(rounds + 1):  # the first round warms up
        acc = {k: [0.0, 0.0] for k in [*kinds, "idle 50 ms after"]}
        for window in windows:
            for kind, call in kinds.items():
                t, c = time.perf_counter(), time.process_time()
                if call is None:
                    (tiny if kind.startswith("tiny") else base).transcribe(window, PROMPT, "en")
                else:
                    call()
                acc[kind][0] += time.perf_counter() - t
                acc[kind][1] += time.process_time() - c
            t, c = time.perf_counter(), time.process_time()
            time.sleep(0.05)  # threads left spinning after the calls show here
            acc["idle 50 ms after"][0] += time.perf_counter() - t
            acc["idle 50 ms after"][1] += time.process_time() - c
        if r:
            out.append({k: [round(v[0] / len(windows) * 1000, 1), round(v[1] / len(windows) * 1000, 1)]
                        for k, v in acc.items()})
    llm.close()
    return {"rounds": out}


def run(rounds: int) -> dict:
    results: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for r in range(rounds):
        for name, (env_set, threads) in SETTINGS.items():
            env = {k: v for k, v in os.environ.items() if k not in WAITING}
            env.update(env_set)
            print(f"{name}: round {r + 1} of {rounds}…", file=sys.stderr, flush=True)
            proc = subprocess.run([sys.executable, "-m", "bench.threads", "--child", str(threads)], cwd=ROOT,
                                  env=env, capture_output=True, text=True, check=False)
            if proc.returncode:  # the child's last line says why (a missing model: which command gets it)
                lines = proc.stderr.strip().splitlines()
                raise SystemExit(f"sotto bench threads: {name}: {lines[-1] if lines else f'exit {proc.returncode}'}")
            results[name] += json.loads(proc.stdout.strip().splitlines()[-1])["rounds"]
    summary = {}
    for name, per_round in results.items():
        row = {}
        for kind in per_round[0]:
            walls = [x[kind][0] for x in per_round]
            cpus = [x[kind][1] for x in per_round]
            row[kind] = {"wall_ms": statistics.median(walls), "wall_spread": [min(walls), max(walls)],
                         "cpu_ms": statistics.median(cpus), "cpu_spread": [min(cpus), max(cpus)]}
        summary[name] = row
    return {"date": time.strftime("%Y-%m-%d"), "rounds": rounds,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
            "settings": {n: {"environment": e, "speech_threads": t} for n, (e, t) in SETTINGS.items()},
            "results": summary}


def table(result: dict) -> str:
    kinds = list(next(iter(result["results"].values())))
    lines = [f"Measured {result['date']} on {result['machine']}; {result['rounds']} rounds of 5 windows each "
             "(per setting: one process per round, the first window pass a warm-up); median (min–max) of "
             "the mean per call.", "",
             "| setting | " + " | ".join(f"{k}: wall / CPU ms" for k in kinds) + " |",
             "|---|" + "---:|" * len(kinds)]
    for name, row in result["results"].items():
        cells = [f"{row[k]['wall_ms']:.0f} ({row[k]['wall_spread'][0]:.0f}–{row[k]['wall_spread'][1]:.0f}) / "
                 f"{row[k]['cpu_ms']:.0f} ({row[k]['cpu_spread'][0]:.0f}–{row[k]['cpu_spread'][1]:.0f})"
                 for k in kinds]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench threads", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)  # speech threads; one setting's process
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, 1)))
        return 0
    result = run(args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

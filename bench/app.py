"""Desktop app benchmark (offscreen): UI responsiveness, flicker as painted, and stop time.

For each recording the real app controller captions it in real time with the
default settings (bundled models, SSBD β=0.2, display-only mask-3) while the
overlay is shown offscreen. Measured:

- the UI thread's longest stall (a 10 ms timer's largest gap): the UI never waits for a model;
- the normalized erasure (NE) of what the overlay painted vs the model output;
- stop time: from pressing Stop at a random moment to every worker being idle.

Usage: .venv/bin/python -m bench.app [--quick] [--stops N] [--json FILE] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
BEGIN, END = "<!-- app:begin -->", "<!-- app:end -->"
CLIPS = ("jfk.flac", "mfa_acoustic_corpus.wav", "librivox_shakespeare_sonnet001.wav")


def _wait(app, predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not reach the expected state")
        app.processEvents()
        time.sleep(0.005)


def run(quick: bool, stops: int) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    tmp = Path(tempfile.mkdtemp(prefix="sotto-bench-app-"))
    os.environ["SOTTO_CONFIG_DIR"] = str(tmp / "config")
    os.environ["SOTTO_DATA_DIR"] = str(tmp / "data")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.controllers.app import AppController
    from core.session.service import ServiceState

    app = QApplication.instance() or QApplication([])
    controller = AppController(show_windows=False)
    controller.overlay.show()
    gaps: list[float] = []
    last = [time.monotonic()]

    def tick() -> None:
        now = time.monotonic()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(tick)
    _wait(app, lambda: controller.service.translation_engine is not None, 120)
    rows = []
    for clip in CLIPS[:2] if quick else CLIPS:
        path = SHARED / "asr" / clip
        controller.apply_setting("audio.source", str(path))
        controller.toggle_start()
        gaps.clear()
        last[0] = time.monotonic()
        timer.start()
        _wait(app, lambda: controller.service.state == ServiceState.RUNNING, 60)
        _wait(app, lambda: controller.service.state == ServiceState.IDLE, 600)
        timer.stop()
        app.processEvents()
        summary = controller.service.last_session.summary.to_dict()
        painted = controller.overlay.displayed_ne()
        ne = summary["normalized_erasure"]
        rows.append({
            "clip": clip,
            "audio_s": summary["audio_seconds"],
            "ui_max_stall_ms": round(1000 * (max(gaps) - 0.010), 1) if gaps else None,
            "ui_p99_stall_ms": round(1000 * (sorted(gaps)[int(0.99 * (len(gaps) - 1))] - 0.010), 1) if gaps else None,
            "ne_source_output": ne["ne_source_output"],
            "ne_source_painted": painted["ne_source_painted"],
            "ne_translation_output": ne.get("ne_translation_output"),
            "ne_translation_painted": painted.get("ne_translation_painted"),
            "lag_mean_s": (summary.get("latency_seconds", {}).get("lag") or {}).get("mean"),
        })
    # stop time: Stop at random moments of a long reading
    rng = random.Random(7)
    stop_times = []
    controller.apply_setting("audio.source", str(SHARED / "asr" / "librivox_shakespeare_sonnet001.wav"))
    for _ in range(stops):
        controller.toggle_start()
        _wait(app, lambda: controller.service.state == ServiceState.RUNNING, 60)
        end = time.monotonic() + rng.uniform(2.0, 20.0)
        _wait(app, lambda end=end: time.monotonic() > end, 60)
        t0 = time.monotonic()
        controller.toggle_start()
        _wait(app, lambda: controller.service.state == ServiceState.IDLE, 30)
        stop_times.append(time.monotonic() - t0)
    controller.shutdown()
    leaked = [t for t in controller.service.threads_alive]
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "clips": rows,
        "stop_seconds": {"n": len(stop_times), "median": round(statistics.median(stop_times), 3),
                         "max": round(max(stop_times), 3)} if stop_times else None,
        "threads_left_after_quit": leaked,
    }


def markdown(result: dict) -> str:
    lines = [
        f"Machine: {result['machine']}. Default settings (tiny.en, Gemma 3 270M SSBD β=0.2 + KV reuse, "
        "display-only mask-3), real-time replay, overlay shown offscreen.",
        "",
        "| recording | audio s | UI max stall ms | UI p99 stall ms | NE source: output → painted | "
        "NE translation: output → painted | lag mean s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["clips"]:
        lines.append(
            f"| {r['clip']} | {r['audio_s']:.1f} | {r['ui_max_stall_ms']} | {r['ui_p99_stall_ms']} | "
            f"{r['ne_source_output']:.2f} → {r['ne_source_painted']:.2f} | "
            f"{r['ne_translation_output']:.2f} → {r['ne_translation_painted']:.2f} | {r['lag_mean_s']} |")
    s = result["stop_seconds"]
    if s:
        lines += ["", f"Stop (press Stop at {s['n']} random moments until every worker is idle): "
                      f"median {s['median']:.3f} s, max {s['max']:.3f} s. "
                      f"Threads left after quitting: {len(result['threads_left_after_quit'])}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.app", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two recordings")
    parser.add_argument("--stops", type=int, default=20)
    parser.add_argument("--json")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.quick, args.stops)
    block = markdown(result)
    print(block)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.write_docs:
        from .docs import replace_block

        replace_block(BEGIN, END, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Soak: hours of real speech through the desktop app, with a reading every minute.

The shared recordings (every clip of ``asr/`` and the long LJSpeech reading), in a
shuffled order that repeats, with 1.5–5 s of silence between them and a minute of
silence every 15 minutes, are played in real time into the real desktop app
(:class:`app.controllers.app.AppController`, offscreen, the overlay shown) with the
default settings: bundled models, German translation, journaling to a history folder
in a temporary directory. The app's own caption service runs it; the source is handed
to :meth:`core.session.service.CaptionService.start`.

Every minute (``--every``) one row: resident memory (read every second; the row gives the
minute's median, the level, and its largest reading, the peak: each speech-encoder pass holds a
~54 MB attention buffer, 6 heads × 1500² floats in tiny.en, for ~0.1 s, so a single reading a
minute catches it about one time in ten), CPU-seconds per second, the lag
(wall clock minus audio clock at each read: median and largest of the minute), the
speech→screen latency of the sentences committed in that minute (when the overlay
received the finished line, minus when its last word was spoken: median and p90), of
their translations, open file descriptors and threads (all of the process's, native ones
included; read every second, the row gives the fewest, the level held through the minute, and the
most), the journal's size and the sentences so far.

The verdict (after ``warmup`` minutes, 10 for runs of 30 minutes or more): every minute's level
of resident memory within ±5% of their median (the peaks are reported beside it); the slope of the lag and of
the latency over the run (seconds per hour, least squares over the per-minute medians);
no growth in threads or descriptors. At the end the journal is read back: every
sentence the overlay showed as finished is in it.

Usage: sotto bench soak --minutes N [--json FILE] [--plot PNG] [--write-docs] [--from-json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DOCS = ROOT / "docs" / "BENCHMARKS.md"
BEGIN, END = "<!-- soak:begin -->", "<!-- soak:end -->"
RATE = 16000
RSS_BAND = 0.05  # resident memory stays within ±5% after the warm-up
_QT: list = []


# -- the looped speech -----------------------------------------------------------------------
@dataclass
class Played:
    """One recording as played: where it starts and ends on the source's clock, and its name."""

    start: float
    end: float
    name: str


def _clips() -> list[tuple[str, np.ndarray]]:
    from core.audio.decode import decode_file

    paths = sorted(p for p in (SHARED / "asr").iterdir() if p.suffix in (".flac", ".wav"))
    paths.append(SHARED / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac")
    return [(p.name, decode_file(p)) for p in paths]


class LoopedSpeech:
    """An endless live source: the shared recordings, shuffled and repeated, with silences between
    them, delivered in real time for ``seconds`` of audio (then it ends). Audio is made as it is
    read, so the source holds only the decoded clips, however long the run."""

    def __init__(self, seconds: float, seed: int = 0) -> None:
        from core.audio.sources import BlockQueue

        self.name = "looped shared recordings"
        self.seconds = seconds
        self.clips = _clips()
        self.played: list[Played] = []
        self.started_at = 0.0  # monotonic time of audio time 0
        self._rng = random.Random(seed)
        self._order: list[int] = []
        self._pending = BlockQueue()
        self._made = 0  # samples generated so far (pending included)
        self._pos = 0  # samples delivered
        self._next_long_pause = 15 * 60.0
        self._stop = threading.Event()
        self._interrupt = threading.Event()

    @property
    def duration(self) -> float | None:
        return None  # live: the app shows no progress bar for it

    @property
    def overflows(self) -> int:
        return 0

    @property
    def position(self) -> float:
        return self._pos / RATE

    def start(self) -> None:
        self.started_at = time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def interrupt(self) -> None:
        self._interrupt.set()

    def _make(self, n: int) -> None:
        """Generate at least ``n`` more samples: the next clip and the silence after it."""
        while self._pending.size < n:
            if not self._order:
                self._order = list(range(len(self.clips)))
                self._rng.shuffle(self._order)
            name, audio = self.clips[self._order.pop()]
            start = self._made / RATE
            self.played.append(Played(start, start + len(audio) / RATE, name))
            pause = self._rng.uniform(1.5, 5.0)
            if start >= self._next_long_pause:  # a minute of silence now and then (a break in a meeting)
                pause, self._next_long_pause = 60.0, self._next_long_pause + 15 * 60.0
            silence = np.zeros(int(pause * RATE), dtype=np.float32)
            self._pending.put(audio)
            self._pending.put(silence)
            self._made += len(audio) + len(silence)

    def _take(self, n: int) -> np.ndarray:
        self._make(n)
        return self._pending.take(n)

    def read(self, min_seconds: float, timeout: float | None = None) -> np.ndarray | None:
        """All audio up to 'now' (at least ``min_seconds``), waiting for it in real time."""
        total = int(self.seconds * RATE)
        if self._pos >= total or self._stop.is_set():
            return None
        target = min(total, self._pos + max(1, int(min_seconds * RATE)))
        wait = self.started_at + target / RATE - time.monotonic()
        if timeout is not None and wait > timeout:
            self._stop.wait(timeout)
            return np.zeros(0, dtype=np.float32)
        if wait > 0 and self._stop.wait(wait):
            return None
        if self._interrupt.is_set():
            self._interrupt.clear()
            return None
        now = int((time.monotonic() - self.started_at) * RATE)
        end = min(total, max(target, now))
        chunk = self._take(end - self._pos)
        self._pos = end
        return chunk


# -- the readings ----------------------------------------------------------------------------
def _proc_status() -> dict[str, int]:
    out = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _descriptors() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 3) if values else None


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


class _Recorder:
    """Connected to the app's bridge (UI thread): what the overlay received, and when."""

    def __init__(self, source: LoopedSpeech) -> None:
        self.source = source
        self.lag: list[float] = []
        self.latency: list[float] = []  # finished sentences of the current minute
        self.translation: list[float] = []
        self.lines = 0  # finished lines seen
        self.texts: list[str] = []  # every finished line, as the overlay got it
        self._untranslated = 0  # first finished line without its final translation
        self.messages: list[tuple[str, str]] = []

    def on_view(self, view) -> None:
        now = time.monotonic()
        for line in view.lines[self.lines:]:
            self.latency.append(now - (self.source.started_at + line.sentence.end))
            self.texts.append(line.sentence.text)
        self.lines = len(view.lines)
        while self._untranslated < len(view.lines) and view.lines[self._untranslated].translation is not None:
            line = view.lines[self._untranslated]
            self.translation.append(now - (self.source.started_at + line.sentence.end))
            self._untranslated += 1

    def on_progress(self, progress) -> None:
        if progress.lag is not None:
            self.lag.append(progress.lag)

    def on_message(self, level: str, text: str) -> None:
        self.messages.append((level, text))
        print(f"  [{level}] {text}", file=sys.stderr)


def _slope_per_hour(minutes: list[float], values: list[float | None]) -> float | None:
    pts = [(m, v) for m, v in zip(minutes, values, strict=True) if v is not None]
    if len(pts) < 3:
        return None
    x, y = np.array(pts, dtype=float).T
    return round(float(np.polyfit(x / 60.0, y, 1)[0]), 3)


def verdict(rows: list[dict], warmup: float) -> dict:
    """Pass or fail per criterion, from the per-minute rows."""
    after = [r for r in rows if r["minute"] >= warmup] or rows[-1:]
    base = float(np.median([r["rss_mb"] for r in after])) if after else None
    rss = [r["rss_mb"] for r in after]
    peaks = [r.get("rss_peak_mb", r["rss_mb"]) for r in after]
    minutes = [r["minute"] for r in rows]
    out = {
        "warmup_minutes": warmup,
        "rss_median_mb": round(base, 1) if base else None,
        "rss_min_mb": min(rss) if rss else None, "rss_max_mb": max(rss) if rss else None,
        "rss_band": round(max(abs(v / base - 1) for v in rss), 4) if rss and base else None,
        "rss_slope_mb_per_hour": _slope_per_hour([r["minute"] for r in after], rss),
        "rss_peak_max_mb": max(peaks) if peaks else None,
        "rss_peak_band": round(max(abs(v / base - 1) for v in peaks), 4) if peaks and base else None,
        "rss_peak_slope_mb_per_hour": _slope_per_hour([r["minute"] for r in after], peaks),
        "lag_slope_s_per_hour": _slope_per_hour(minutes, [r["lag_p50"] for r in rows]),
        "lag_max_slope_s_per_hour": _slope_per_hour(minutes, [r["lag_max"] for r in rows]),
        "latency_slope_s_per_hour": _slope_per_hour(minutes, [r["latency_p50"] for r in rows]),
        "translation_slope_s_per_hour": _slope_per_hour(minutes, [r["translation_p50"] for r in rows]),
        "threads": [after[0]["threads"], max(r["threads"] for r in after)] if after else None,
        "descriptors": [after[0]["fds"], max(r["fds"] or 0 for r in after)] if after else None,
    }
    out["rss_flat"] = out["rss_band"] is not None and out["rss_band"] <= RSS_BAND
    out["threads_flat"] = out["threads"] is not None and out["threads"][1] <= out["threads"][0]
    out["descriptors_flat"] = out["descriptors"] is not None and out["descriptors"][1] <= out["descriptors"][0]
    return out


# -- the run ---------------------------------------------------------------------------------
def run(minutes: float, every: float = 60.0, json_path: Path | None = None, target: str = "de",
        seed: int = 0) -> dict:
    """Caption ``minutes`` of looped speech in the offscreen app; the readings and the verdict."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    tmp = Path(tempfile.mkdtemp(prefix="sotto-soak-"))
    os.environ["SOTTO_CONFIG_DIR"] = str(tmp / "config")
    os.environ["SOTTO_DATA_DIR"] = str(tmp / "data")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.controllers.app import AppController
    from core.session.history import read_session

    app = QApplication.instance() or QApplication([])
    controller = AppController(show_windows=False, preload=False)
    controller.apply_setting("translation.target", target)
    controller.overlay.show()
    source = LoopedSpeech(minutes * 60.0, seed)
    recorder = _Recorder(source)
    controller.bridge.view_changed.connect(recorder.on_view)
    controller.bridge.progress_changed.connect(recorder.on_progress)
    controller.bridge.message.connect(recorder.on_message)
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "date": time.strftime("%Y-%m-%d"), "minutes": minutes, "every_s": every, "target": target,
        "engine": controller.settings.asr.engine, "rows": [],
    }
    warmup = 10.0 if minutes >= 30 else round(minutes / 3, 2)
    history = tmp / "data" / "history"
    last = {"wall": time.monotonic(), "cpu": sum(os.times()[:2])}
    memory: list[float] = []  # resident memory read every second of the current minute (MB)
    # descriptors and threads read every second too: the row keeps their fewest, the level. A file
    # open for a moment (the journal appended to, a settings write) or a short-lived worker is not held;
    # a leak raises the level.
    held: dict[str, list[int]] = {"fds": [], "threads": []}

    def sample() -> None:
        status = _proc_status()
        memory.append(status.get("VmRSS", 0) / 1024)
        fds = _descriptors()
        if fds is not None:
            held["fds"].append(fds)
        held["threads"].append(status.get("Threads", 0))

    def reading() -> None:
        now, cpu = time.monotonic(), sum(os.times()[:2])
        sample()
        row = {
            "minute": round((now - source.started_at) / 60.0, 2),
            "rss_mb": round(float(np.median(memory)), 1),  # the level (see the module's docstring)
            "rss_peak_mb": round(max(memory), 1),
            "cpu_per_s": round((cpu - last["cpu"]) / max(1e-9, now - last["wall"]), 3),
            "lag_p50": _median(recorder.lag), "lag_max": round(max(recorder.lag), 3) if recorder.lag else None,
            "latency_p50": _median(recorder.latency), "latency_p90": _pct(recorder.latency, 90),
            "translation_p50": _median(recorder.translation), "translation_p90": _pct(recorder.translation, 90),
            "sentences": recorder.lines, "fds": min(held["fds"]) if held["fds"] else None,
            "fds_peak": max(held["fds"]) if held["fds"] else None, "threads": min(held["threads"]),
            "threads_peak": max(held["threads"]),
            "python_threads": threading.active_count(), "journal_kb": round(_folder_bytes(history) / 1024, 1),
        }
        last.update(wall=now, cpu=cpu)
        memory.clear()
        held["fds"].clear()
        held["threads"].clear()
        recorder.lag.clear()
        recorder.latency.clear()
        recorder.translation.clear()
        result["rows"].append(row)
        print(f"  {row['minute']:6.1f} min: RSS {row['rss_mb']:.0f} MB, {row['cpu_per_s']:.2f} CPU-s/s, lag p50 "
              f"{row['lag_p50']} s (max {row['lag_max']}), latency p50 {row['latency_p50']} s, translation "
              f"{row['translation_p50']} s, {row['threads']} threads, {row['fds']} fds, "
              f"{row['sentences']} sentences", file=sys.stderr)
        result["verdict"] = verdict(result["rows"], warmup)
        if json_path is not None:  # written every minute: a run cut short still has its readings
            json_path.write_text(json.dumps(result, indent=1), encoding="utf-8")

    timer = QTimer()
    timer.setInterval(int(every * 1000))
    timer.timeout.connect(reading)
    sampler = QTimer()
    sampler.setInterval(1000)
    sampler.timeout.connect(sample)
    controller.overlay_controller.new_session()
    controller.service.start(source)
    deadline = time.monotonic() + 600
    while controller.service.state != "running":  # models load first
        if time.monotonic() > deadline:
            raise TimeoutError("the caption service did not start in 10 minutes")
        app.processEvents()
        time.sleep(0.01)
    last.update(wall=time.monotonic(), cpu=sum(os.times()[:2]))
    timer.start()
    sampler.start()
    while controller.service.state != "idle":
        app.processEvents()
        time.sleep(0.01)
    timer.stop()
    sampler.stop()
    app.processEvents()
    reading()  # the last, partial minute
    session = controller.service.last_session
    journal = read_session(session.directory) if session is not None else None
    journaled = {e.source for e in journal.entries} if journal is not None else set()
    shown = recorder.texts
    result["journal"] = {
        "shown_finished": len(shown), "journaled": len(journal.entries) if journal is not None else 0,
        "missing": sum(1 for t in shown if t.strip() not in journaled),
        "translated": sum(1 for e in journal.entries if e.translation) if journal is not None else 0,
        "damaged_lines": journal.damaged_lines if journal is not None else None,
    }
    result["summary"] = session.summary.to_dict() if session is not None else None
    result["errors"] = [text for level, text in recorder.messages if level == "error"]
    result["played"] = len(source.played)
    controller.shutdown()
    if json_path is not None:
        json_path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


# -- reporting -------------------------------------------------------------------------------
def table(result: dict, every_minutes: int = 10) -> str:
    """The Markdown table: every ``every_minutes``-th row and the last, then the verdict."""
    rows = result["rows"]
    pick = [r for i, r in enumerate(rows) if i % every_minutes == every_minutes - 1 or i == len(rows) - 1]

    def f(v, digits=2):
        return "–" if v is None else f"{v:.{digits}f}"

    out = ["| minute | RSS level / peak (MB) | CPU-s per s | lag p50 / max (s) | sentence latency p50 / p90 (s) | "
           "translation p50 / p90 (s) | threads | fds | journal (KB) | sentences |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in pick:
        peak = f"{r['rss_peak_mb']:.0f}" if r.get("rss_peak_mb") is not None else "–"
        out.append(f"| {r['minute']:.0f} | {r['rss_mb']:.0f} / {peak} | {f(r['cpu_per_s'])} | {f(r['lag_p50'])} / "
                   f"{f(r['lag_max'])} | {f(r['latency_p50'])} / {f(r['latency_p90'])} | {f(r['translation_p50'])} / "
                   f"{f(r['translation_p90'])} | {r['threads']} | {r['fds']} | {r['journal_kb']:.0f} | "
                   f"{r['sentences']} |")
    v = result.get("verdict") or {}
    j = result.get("journal") or {}
    ok = {True: "yes", False: "**no**"}
    out += [
        "",
        f"After the {v.get('warmup_minutes')}-minute warm-up: resident memory {f(v.get('rss_min_mb'), 0)}–"
        f"{f(v.get('rss_max_mb'), 0)} MB (each minute's median of readings every second), at most "
        f"{100 * (v.get('rss_band') or 0):.1f}% from their median {f(v.get('rss_median_mb'), 0)} MB (within ±5%: "
        f"{ok[bool(v.get('rss_flat'))]}), trend {f(v.get('rss_slope_mb_per_hour'), 1)} MB per hour; the "
        f"minutes' peaks (a speech-encoder pass in flight) up to {f(v.get('rss_peak_max_mb'), 0)} MB, "
        f"{100 * (v.get('rss_peak_band') or 0):.1f}% over the median, trend "
        f"{f(v.get('rss_peak_slope_mb_per_hour'), 1)} MB per hour; threads "
        f"{v.get('threads')} (no growth: {ok[bool(v.get('threads_flat'))]}); descriptors {v.get('descriptors')} "
        f"(no growth: {ok[bool(v.get('descriptors_flat'))]}). Slopes over the run, seconds per hour: lag "
        f"{f(v.get('lag_slope_s_per_hour'), 3)} (its per-minute maximum {f(v.get('lag_max_slope_s_per_hour'), 3)}), "
        f"sentence latency {f(v.get('latency_slope_s_per_hour'), 3)}, translation "
        f"{f(v.get('translation_slope_s_per_hour'), 3)}.",
    ]
    if j:
        out.append(
            f"Journal: {j['journaled']} sentences, {j['shown_finished']} shown as finished, "
            f"{j['missing']} of those missing from it; errors told to the user: {len(result.get('errors', []))}."
        )
    return "\n".join(out)


def plot(result: dict, path: Path) -> None:
    """Four panels over the run's minutes: memory, CPU, lag and latency, threads and descriptors
    (painted with Qt, offscreen)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

    if QGuiApplication.instance() is None:
        _QT.append(QGuiApplication([]))
    rows = result["rows"]
    panels = [
        ("resident memory (MB)", [("level", "rss_mb", "#1f77b4"), ("peak", "rss_peak_mb", "#aec7e8")]),
        ("CPU-seconds per second", [("CPU", "cpu_per_s", "#ff7f0e")]),
        ("seconds", [("lag p50", "lag_p50", "#2ca02c"), ("lag max", "lag_max", "#98df8a"),
                     ("sentence latency p50", "latency_p50", "#d62728"),
                     ("translation p50", "translation_p50", "#9467bd")]),
        ("count", [("threads", "threads", "#8c564b"), ("descriptors", "fds", "#e377c2")]),
    ]
    width, panel_h, margin = 1400, 260, 70
    height = len(panels) * (panel_h + 60) + 20
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setFont(QFont("DejaVu Sans", 10))
    span = max((r["minute"] for r in rows), default=1.0) or 1.0
    for k, (title, series) in enumerate(panels):
        box = QRectF(margin, 30 + k * (panel_h + 60), width - 2 * margin - 200, panel_h)
        values = [r[key] for _n, key, _c in series for r in rows if r.get(key) is not None]
        memory = series[0][1] == "rss_mb"
        lo, hi = 0.0, max(values, default=1.0) * 1.1 or 1.0
        if memory:  # room for the ±5% band around the median
            levels = [r["rss_mb"] for r in rows if r.get("rss_mb") is not None]
            median = float(np.median(levels)) if levels else 1.0
            lo = min(min(values, default=median), median * (1 - 1.5 * RSS_BAND))
            hi = max(max(values, default=median), median * (1 + 1.5 * RSS_BAND))
        p.setPen(QPen(QColor("#888"), 1))
        p.drawRect(box)
        p.setPen(QColor("black"))
        p.drawText(QRectF(box.left(), box.top() - 22, box.width(), 20), Qt.AlignmentFlag.AlignCenter, title)
        for i in range(5):
            v = lo + (hi - lo) * i / 4
            y = box.bottom() - i / 4 * box.height()
            p.setPen(QPen(QColor("#ddd"), 1))
            p.drawLine(QPointF(box.left(), y), QPointF(box.right(), y))
            p.setPen(QColor("black"))
            p.drawText(QRectF(box.left() - 65, y - 8, 60, 16), Qt.AlignmentFlag.AlignRight,
                       f"{v:.0f}" if hi - lo > 10 else f"{v:.2f}")
        if memory and result.get("verdict", {}).get("rss_median_mb"):  # the ±5% band
            base = result["verdict"]["rss_median_mb"]
            for edge in (base * (1 - RSS_BAND), base * (1 + RSS_BAND)):
                y = box.bottom() - (edge - lo) / (hi - lo) * box.height()
                if box.top() <= y <= box.bottom():
                    p.setPen(QPen(QColor("#bbb"), 1, Qt.PenStyle.DashLine))
                    p.drawLine(QPointF(box.left(), y), QPointF(box.right(), y))
        p.setPen(QColor("black"))
        step = max(1, int(span // 10) or 1)
        for tick in range(0, int(span) + 1, step):
            x = box.left() + tick / span * box.width()
            p.drawText(QRectF(x - 30, box.bottom() + 4, 60, 16), Qt.AlignmentFlag.AlignCenter, f"{tick}")
        p.drawText(QRectF(box.left(), box.bottom() + 20, box.width(), 16), Qt.AlignmentFlag.AlignCenter, "minute")
        for c, (name, key, colour) in enumerate(series):
            pts = [QPointF(box.left() + r["minute"] / span * box.width(),
                           box.bottom() - (r[key] - lo) / (hi - lo) * box.height())
                   for r in rows if r.get(key) is not None]
            p.setPen(QPen(QColor(colour), 2))
            if len(pts) > 1:
                p.drawPolyline(pts)
            p.drawLine(
                QPointF(box.right() + 15, box.top() + 12 + 18 * c), QPointF(box.right() + 40, box.top() + 12 + 18 * c)
            )
            p.setPen(QColor("black"))
            p.drawText(QPointF(box.right() + 46, box.top() + 17 + 18 * c), name)
    p.end()
    image.save(str(path))


def write_docs(result: dict, command: str, image: str | None) -> None:
    """Replace the soak section of docs/BENCHMARKS.md."""
    from .docs import write_section

    pic = f"\n\n![soak]({image})" if image else ""
    write_section(BEGIN, END, f"`{command}` — target {result['target']}, engine {result['engine']}, "
                  f"{result['machine']}, {result['date']}; one row every 10 minutes (each row: that minute's "
                  f"readings).\n\n{table(result)}{pic}", "## Soak: hours of captions (`sotto bench soak`)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sotto bench soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=120.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between readings (default 60)")
    parser.add_argument("--target", default="de")
    parser.add_argument("--json", help="write the readings here (rewritten every reading)")
    parser.add_argument("--plot", help="write the plot (PNG) here")
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--from-json", help="table, plot and docs from an earlier --json file (no run)")
    args = parser.parse_args(argv)
    if args.from_json:  # the verdict afresh (a run cut short was judged only up to its last reading)
        result = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        result["verdict"] = verdict(result["rows"], result.get("verdict", {}).get("warmup_minutes", 10.0))
    else:
        result = run(args.minutes, args.every, Path(args.json) if args.json else None, args.target)
    print(table(result))
    if args.plot:
        plot(result, Path(args.plot))
    if args.write_docs:
        image = os.path.relpath(args.plot, DOCS.parent) if args.plot else None
        write_docs(result, f"sotto bench soak --minutes {result['minutes']:g}", image)
    return 0


if __name__ == "__main__":
    sys.exit(main())

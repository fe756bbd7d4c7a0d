"""The soak benchmark's 3-minute version: looped real speech through the desktop app (offscreen,
default settings, German translation) in real time, in a process of its own, read every 30 s.

The 120-minute run and its plot are in docs/BENCHMARKS.md (`sotto bench soak --minutes 120`);
it holds resident memory within ±5% of its median after a 10-minute warm-up. Three minutes are too
few readings for that band (the end of a session, when the last lines are decoded and translated,
reads a few percent higher), so this test holds 10%, and the rest as the benchmark does: no
growth in threads or descriptors, a bounded lag, every finished line in the journal. Its minutes
are wall-clock minutes of the suite's: the hours belong to the benchmark.
"""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def soak(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("soak") / "soak.json"
    proc = subprocess.run([sys.executable, "-m", "bench.soak", "--minutes", "3", "--every", "30", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    print(proc.stdout)
    return json.loads(out.read_text())


def test_threads_and_descriptors_do_not_grow(soak):
    v = soak["verdict"]
    assert v["threads_flat"], v["threads"]
    assert v["descriptors_flat"], v["descriptors"]


def test_memory_stays_within_ten_percent_after_the_warm_up(soak):
    v = soak["verdict"]
    assert v["rss_band"] is not None and v["rss_band"] <= 0.10, v
    # the level is each minute's median of readings every second; the peak is reported beside it
    assert all(r["rss_peak_mb"] >= r["rss_mb"] > 0 for r in soak["rows"]), soak["rows"]
    assert v["rss_peak_max_mb"] >= v["rss_max_mb"], v


def test_the_lag_stays_bounded_and_captions_keep_coming(soak):
    from core.session.summary import BEHIND_S

    rows = soak["rows"]
    assert len(rows) >= 5
    # under BEHIND_S the user is never told Sotto fell behind; twice that allows one slow moment
    assert max(r["lag_max"] for r in rows if r["lag_max"] is not None) < 2 * BEHIND_S, rows
    assert all(r["latency_p50"] is not None for r in rows[:-1]), "a half minute without a finished line"
    # no flood of lines (the dots loop the 2-hour soak found made ~1500 a minute); people say ~10 a minute
    counts = [r["sentences"] for r in rows]
    assert max(b - a for a, b in pairwise(counts)) <= 30, counts
    assert soak["errors"] == []


def test_every_finished_line_is_in_the_journal_with_its_translation(soak):
    j = soak["journal"]
    assert j["shown_finished"] >= 15 and j["missing"] == 0 and j["damaged_lines"] == 0, j
    assert j["journaled"] >= j["shown_finished"]
    assert j["translated"] >= 0.9 * j["journaled"], j

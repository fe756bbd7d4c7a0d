"""Issue #51's prepared GPU run, in its dry mode on the CPU: every part runs end to end with the real bundled
translator, a proxy of each catalogue architecture and random-weight Whisper, and what travels to the GPU
machine (the GGUF in parts, the pure-Python packages) is put together there as it was."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from bench.gpu_all import GGUF_NAME, SITE_PACKAGES, join_parts, pack

ROOT = Path(__file__).resolve().parent.parent


def test_the_dry_run_runs_every_part(tmp_path):
    out = tmp_path / "gpu_all.json"
    proc = subprocess.run([sys.executable, "-m", "bench.gpu_all", "--dry", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    parts = result["parts"]
    assert set(parts) == {"ssbd", "translator_proxies", "speech_verifiers"}
    assert not any("error" in part or "skipped" in part for part in parts.values()), parts
    ssbd = parts["ssbd"]
    assert [row["beta"] for row in ssbd["rows"]] == [0, 0.1, 0.2, 0.3, 0.5]
    zero = ssbd["rows"][0]
    assert zero["verifies"] == "exact" and zero["identical_to_ar"] == 1.0  # β = 0 is greedy on the CPU build
    assert all(row["speedup_vs_ar_reuse"] > 0 and row["chrf"] is not None for row in ssbd["rows"])
    assert ssbd["verification_cost"]
    proxies = {name: p for name, p in parts["translator_proxies"].items() if name != "seconds"}
    assert {p["architecture"] for p in proxies.values()} == {"hunyuan-dense", "gemma3"}
    assert all(p["tokens_per_s"] > 0 and [r["tokens"] for r in p["verification"]] == [1, 2, 4, 7]
               for p in proxies.values())
    rows = parts["speech_verifiers"]["tiny-test"]["rows"]
    assert [r["draft_tokens"] for r in rows] == [8, 16, 24] and all(r["pass_ms"] > 0 for r in rows)


def test_what_travels_is_put_together_there(tmp_path, store):
    parts = pack(part_mb=60, out=tmp_path)
    assert len(parts) > 1 and all(p.stat().st_size <= 60_000_000 for p in parts)
    original = store.resolve("gemma-3-270m")
    joined = join_parts(tmp_path)
    assert joined == tmp_path / GGUF_NAME
    assert hashlib.sha256(joined.read_bytes()).digest() == hashlib.sha256(original.read_bytes()).digest()
    site = tmp_path / "site"
    assert all((site / name).exists() or (site / f"{name}.py").exists() for name in SITE_PACKAGES)
    lines = [(tmp_path / name).read_text().count("\n") for name in ("ntrex-sources.txt", "ntrex-de.txt")]
    assert lines[0] == lines[1] > 100

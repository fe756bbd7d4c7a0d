"""Translation model advice: what the machine has decides the model advised, the bundled model's
measured speed is kept, and the settings panel gets and uses the advised model in one click."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.models.advice import (
    BUNDLED,
    BY_PROXY,
    BY_SCALING,
    LIVE_TOKENS_PER_S,
    Machine,
    advise,
    catalogue_sizes,
    estimated_speed,
    measured_speeds,
    rate,
    recommend,
    record_proxy_speeds,
    record_speed,
    total_memory,
)

ROOT = Path(__file__).resolve().parent.parent
GB = 1_000_000_000
SIZES = catalogue_sizes()


def test_catalogue_has_every_candidate():
    assert set(SIZES) == {"translategemma-4b", "hy-mt2-1.8b", "qwen2.5-3b-instruct", "eurollm-1.7b-instruct",
                          "qwen2.5-1.5b-instruct", BUNDLED}


@pytest.mark.parametrize("machine, advised", [
    # a GPU laptop or desktop: the 4B translation model
    (Machine(16 * GB, 8, "CUDA"), "translategemma-4b"),
    (Machine(16 * GB, 8, "Apple Silicon (Metal)"), "translategemma-4b"),
    # a 6 GB machine with a GPU: the 3-4B models do not fit beside the OS and the speech models
    (Machine(6 * GB, 8, "CUDA"), "hy-mt2-1.8b"),
    # an ordinary 8-core laptop measured at 120 tokens/s with the bundled model: 1.8B keeps up, 3-4B not
    (Machine(16 * GB, 8, None, 120.0), "hy-mt2-1.8b"),
    # the 2-core CI machine (about 21 tokens/s measured): only the bundled model keeps up
    (Machine(25 * GB, 2, None, 21.5), BUNDLED),
    # too little memory for anything bigger, however fast
    (Machine(4 * GB, 16, "CUDA", 500.0), BUNDLED),
])
def test_advice_follows_the_machine(machine, advised):
    advice = recommend(machine, SIZES)
    assert advice.model == advised, advice
    assert advice.reason.endswith(".") and advice.languages
    if advised != BUNDLED:
        assert advice.estimated_tokens_per_s >= LIVE_TOKENS_PER_S
    else:  # says why each bigger model was not advised
        assert all(name in advice.reason for name in SIZES if name != BUNDLED)


def test_speed_scales_with_parameters_and_says_whether_measured():
    measured = Machine(16 * GB, 4, None, 100.0)
    assert estimated_speed(BUNDLED, measured) == (100.0, True)
    small, _ = estimated_speed("qwen2.5-1.5b-instruct", measured)
    big, _ = estimated_speed("qwen2.5-3b-instruct", measured)
    assert big < small < 100.0
    assert estimated_speed(BUNDLED, Machine(16 * GB, 4))[1] is False
    assert "measured" in recommend(measured, SIZES).reason
    assert "estimated from the core count" in recommend(Machine(16 * GB, 64), SIZES).reason


def test_memory_is_read():
    assert total_memory() > GB  # /proc-less sysconf on Linux and macOS


def test_speed_is_recorded_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path))
    assert measured_speeds() == {}
    record_speed(BUNDLED, 10, 1.0)  # too few tokens to mean anything
    assert measured_speeds() == {}
    record_speed(BUNDLED, 120, 2.0)
    assert measured_speeds() == {BUNDLED: 60.0}
    (tmp_path / "translation-speed.json").write_text("{not json")
    assert measured_speeds() == {}, "a damaged record is ignored"
    record_speed(BUNDLED, 300, 2.0)  # and replaced
    assert measured_speeds() == {BUNDLED: 150.0}


def test_models_advise_measures_the_bundled_model(tmp_path, monkeypatch):
    env = {**os.environ, "SOTTO_DATA_DIR": str(tmp_path), "SOTTO_CONFIG_DIR": str(tmp_path / "config")}
    # a proxy speed stored for this machine (`sotto models advise` times the proxies the first time, or with
    # --proxies: tests/test_translator_proxy.py times them)
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path))
    record_proxy_speeds({"qwen2.5-3b-instruct": {"tokens_per_s": 3.0}})
    proc = subprocess.run([sys.executable, "-m", "app", "models", "advise", "--no-proxies"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "translation-speed.json").read_text())
    tps = record[BUNDLED]["tokens_per_s"]
    assert tps > 0 and record[BUNDLED]["tokens"] >= 30
    assert f"translates {tps:.0f} tokens/s here" in proc.stdout
    rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("  ")}
    assert f"about 3.0 tokens/s here, too slow for live captions ({BY_PROXY}, " in rows["qwen2.5-3b-instruct"]
    assert BY_SCALING in rows["qwen2.5-1.5b-instruct"], "no proxy measured for it: scaled from the bundled model"
    assert f"about {rate(tps)} tokens/s here" in rows[BUNDLED]
    assert "Advised translation model for this machine: " in proc.stdout
    listing = subprocess.run([sys.executable, "-m", "app", "models"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
    assert "measured speed" in listing.stdout, "the listing's advice uses the measurement"


def test_settings_panel_downloads_and_uses_the_advised_model(qtbot, tmp_path, monkeypatch):
    from test_download import _Server

    from app.controllers.app import AppController

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    models = tmp_path / "models"
    monkeypatch.setenv("SOTTO_MODELS_DIR", str(models))
    # this machine measured fast enough for a 1.8B model (a record as `sotto models advise` writes it)
    record_speed(BUNDLED, 1200, 10.0)
    record_proxy_speeds({"translategemma-4b": {"tokens_per_s": 4.0}})  # its random-weight proxy's speed here
    assert advise().model == "hy-mt2-1.8b"
    payload = os.urandom(400_000)
    server = _Server()
    server.files = {"Hy-MT2-1.8B-Q4_K_M.gguf": payload}
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    c = AppController(show_windows=False, preload=False)
    try:
        panel = c.show_settings()
        assert "hy-mt2-1.8b" in panel.advice.text() and "(in use)" not in panel.advice.text()
        assert not panel.use_advised.isHidden() and panel.use_advised.text() == "Download and use it"
        # each translator's speed here beside it in the list, and under the one chosen
        labels = {panel.translation_model.combo.itemData(i): panel.translation_model.combo.itemText(i)
                  for i in range(panel.translation_model.combo.count())}
        assert labels["translategemma-4b"].endswith(
            f"about 4.0 tokens/s here, too slow for live captions ({BY_PROXY})")
        assert "about 120 tokens/s here, keeps up (measured)" in labels[BUNDLED]
        assert "about 120 tokens/s here, keeps up (measured)" in panel.translation_model.status.text()
        with qtbot.waitSignal(c.downloads.finished, timeout=60_000):
            panel.use_advised.click()
        assert c.settings.translation.model == "hy-mt2-1.8b", "used once downloaded"
        assert (models / "hy-mt2-1.8b" / "Hy-MT2-1.8B-Q4_K_M.gguf").read_bytes() == payload
        assert "in use" in panel.message.text()
        assert "(in use)" in panel.advice.text() and panel.use_advised.isHidden()
        assert panel.translation_model.combo.currentData() == "hy-mt2-1.8b"
    finally:
        c.shutdown()
        server.close()

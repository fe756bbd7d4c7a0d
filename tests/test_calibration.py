"""The engine follows the machine (core.asr.calibration, `sotto calibrate`): random-weight proxies
load and decode like the real model, the 1/2-layer extrapolation, the ladder and the choice, the
saved result, and the command end to end with the bundled models. No timing is asserted: how fast a
model runs is the calibration's own output and the benchmarks'."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from core.asr.calibration import (
    BUDGET,
    PREDICT_NEAR,
    SHAPES,
    Calibration,
    Rung,
    Timer,
    Workload,
    build_proxy,
    choose,
    evaluate,
    extrapolate,
    ladder,
    load_calibration,
    predict_seconds,
    proxy_bytes,
    proxy_depths,
    save_calibration,
    settled,
    shape_of,
    total,
)

# one verifier decode of a JFK line, as the calibration measured it (encoder frames, prompt, steps)
WORKLOAD = Workload(frames=1112, prompt_tokens=14, steps=21)
@pytest.fixture(scope="module")
def base_timings(store):
    """The real whisper-base and random-weight models of its shape (1, 2 and its full 6 layers),
    timed in turns on the same input."""
    from core.asr.calibration import _vocabulary

    vocabulary = _vocabulary(store)
    base = SHAPES["base"]
    paths = {f"base/{n}": build_proxy(base, n, n, vocabulary) for n in (1, 2, 6)}
    paths["real"] = Path(store.resolve("whisper-base"))
    timer = Timer(vocabulary)
    models = {name: timer.load(path) for name, path in paths.items()}
    asked: list[int] = []  # pairs per model each time the timing asked whether it has enough

    def enough(samples) -> bool:
        asked.append(len(samples["real"]))
        return len(asked) == 2

    samples = timer.time(models, WORKLOAD, repeats=5, enough=enough)
    # asked from the third round on (SETTLE_ROUNDS), with every model's pairs so far; stopped at the first yes
    assert asked == [3, 4], asked
    return samples


def test_random_base_proxies_load_decode_and_give_a_prediction(base_timings, store):
    """The proxies of base's shape (1, 2 and 6 layers) load and decode the workload beside the real
    model, and the 1- and 2-layer timings give a prediction for the full depth. How close that
    prediction comes to the real model is a timing, which moves with the machine's load, so it is
    printed, not asserted."""
    assert set(base_timings) == {"base/1", "base/2", "base/6", "real"}
    assert all(len(rounds) == 4 and all(enc > 0 and dec > 0 for enc, dec in rounds)
               for rounds in base_timings.values())
    predicted = predict_seconds(base_timings, [SHAPES["base"]])
    assert set(predicted) == {"base"} and predicted["base"] > 0
    print("real", total(base_timings["real"]), "proxy", total(base_timings["base/6"]), "predicted", predicted)


def test_the_timing_settles_once_no_prediction_is_near_a_threshold():
    """The proxies' rounds may stop early only where a prediction is a fifth or more from every threshold
    it decides against: on a 2-core CPU small.en and medium.en are far over the budget; a machine where one
    sits near it gets all its rounds."""
    assert settled({"small": 1.05, "medium": 3.43}, (BUDGET,))
    assert not settled({"small": 0.8, "medium": 3.43}, (BUDGET,))  # small.en near the budget
    assert not settled({"small": 0.65}, (BUDGET,)) and settled({"small": 0.65}, (BUDGET,), margin=0.1)
    # an installed verifier is also timed for real when predicted under BUDGET × PREDICT_NEAR: near that, no stop
    assert not settled({"small": 1.05}, (BUDGET, BUDGET * PREDICT_NEAR))


def test_extrapolation_and_shapes():
    assert extrapolate(1.0, 1.5, 1) == 1.0
    assert extrapolate(1.0, 1.5, 6) == pytest.approx(3.5)
    turbo = SHAPES["large-v3-turbo"]  # encoder and decoder to their own depths (32 and 4)
    samples = {"large-v3-turbo/1": [(1.0, 2.0)], "large-v3-turbo/2": [(1.5, 2.25)]}
    assert predict_seconds(samples, [turbo])["large-v3-turbo"] == pytest.approx(1.0 + 31 * 0.5 + 2.0 + 3 * 0.25)
    # a round where load made the 2-layer proxy look faster than the 1-layer one is left out (31 times its
    # difference would make the prediction negative); with no other round, the medians and a free layer
    burst = {"large-v3-turbo/1": [(1.0, 2.0), (1.0, 2.0)], "large-v3-turbo/2": [(1.5, 2.25), (0.5, 2.25)]}
    assert predict_seconds(burst, [turbo])["large-v3-turbo"] == pytest.approx(1.0 + 31 * 0.5 + 2.0 + 3 * 0.25)
    only = {"large-v3-turbo/1": [(1.0, 2.0)], "large-v3-turbo/2": [(0.5, 2.25)]}
    assert predict_seconds(only, [turbo])["large-v3-turbo"] == pytest.approx(1.0 + 2.0 + 3 * 0.25)
    # openai/whisper's dimensions
    assert (SHAPES["base"].width, SHAPES["base"].heads, SHAPES["base"].encoder_layers) == (512, 8, 6)
    assert (SHAPES["small"].width, SHAPES["small"].encoder_layers) == (768, 12)
    assert (SHAPES["medium"].width, SHAPES["medium"].heads, SHAPES["medium"].decoder_layers) == (1024, 16, 24)
    assert (turbo.width, turbo.mels, turbo.vocab, turbo.decoder_layers) == (1280, 128, 51866, 4)
    assert shape_of("whisper-small.en") is SHAPES["small"] and shape_of("whisper-medium") is SHAPES["medium"]


def test_a_gpu_times_full_depth_proxies_where_the_disk_holds_them(store):
    """On a GPU a layer's cost is lost in a decode's fixed costs (on an H200 the 1/2-layer extrapolation
    put medium below base), so there the proxies have their full depth, timed as is; on the CPU, or
    where the disk is short, 1 and 2 layers, extrapolated. The size estimate is checked against the
    bundled base (float16 weights, as a GPU's proxies are)."""
    shapes = [SHAPES[n] for n in ("base", "small", "medium", "large-v3-turbo")]
    real = (store.resolve("whisper-base") / "model.bin").stat().st_size
    assert proxy_bytes(SHAPES["base"], 6, 6, "float16") == pytest.approx(real, rel=0.01)
    need = sum(proxy_bytes(s, s.encoder_layers, s.decoder_layers, "float16") for s in shapes)
    assert 3.5e9 < need < 4.0e9  # medium and large-v3-turbo: about 1.5 and 1.6 GB each
    full = proxy_depths(shapes, "cuda", "float16", need + 2**31)
    assert full == {"base/full": (6, 6), "small/full": (12, 12), "medium/full": (24, 24),
                    "large-v3-turbo/full": (32, 4)}
    split = {f"{s.name}/{n}": (n, n) for s in shapes for n in (1, 2)}
    assert proxy_depths(shapes, "cuda", "float16", need) == split  # no gigabyte to spare
    assert proxy_depths(shapes, "cpu", "int8", 10**13) == split
    # a full-depth proxy's median over rounds is its prediction; the others are extrapolated
    samples = {"medium/full": [(1.0, 2.0), (1.5, 2.5), (9.0, 9.0)], "small/1": [(1.0, 1.0)], "small/2": [(1.5, 1.5)]}
    predicted = predict_seconds(samples, [SHAPES["medium"], SHAPES["small"]])
    assert predicted == {"medium": pytest.approx(4.0), "small": pytest.approx(1.0 + 11 * 0.5 + 1.0 + 11 * 0.5)}


# -- the ladder and the choice (pure) -------------------------------------------------------------
def test_ladder_by_language():
    en = ladder("en")
    assert [r.name for r in en] == ["tiny.en alone", "tiny.en verified by base", "tiny.en verified by small.en",
                                    "tiny.en verified by medium.en"]
    assert [r.verifier for r in en] == [None, "whisper-base", "whisper-small.en", "whisper-medium.en"]
    assert {r.drafter for r in en} == {"whisper-tiny.en"}
    assert ladder(None) == en
    de = ladder("de")
    assert [r.drafter for r in de] == ["whisper-tiny"] * 4
    assert [r.verifier for r in de] == [None, "whisper-base", "whisper-small", "whisper-medium"]
    assert en[0].settings() == {"asr.engine": "faster-whisper", "asr.model": "whisper-tiny.en",
                                "asr.verify_lines": False}
    assert en[2].settings()["asr.verifier"] == "whisper-small.en" and en[2].settings()["asr.verify_lines"] is True


def _results(verifier_costs, installed=(True, True, False, False), drafter=0.3, translation=0.1):
    out = []
    for rung, cost, here in zip(ladder("en"), verifier_costs, installed, strict=True):
        missing = [] if here else [rung.verifier or rung.drafter]
        out.append(evaluate(rung, drafter, cost, translation, measured=here, missing=missing))
    return out


def test_choose_the_most_accurate_installed_that_keeps_up():
    results = _results([0.0, 0.1, 0.25, 0.7])
    assert [r.keeps_up for r in results] == [True, True, True, False]
    choice = choose(results)
    assert choice.name == "tiny.en verified by base"
    assert "small.en would keep up too" in choice.reason and "sotto models get whisper-small.en" in choice.reason
    assert choice.settings["asr.verifier"] == "whisper-base" and choice.settings["asr.verify_lines"] is True
    # once small.en is installed it is chosen; medium.en still does not keep up
    assert choose(_results([0.0, 0.1, 0.25, 0.7], installed=(True,) * 4)).name == "tiny.en verified by small.en"
    # a reason names the stages and says measured or predicted
    assert "verifier 0.25 predicted" in results[2].reason and "not installed" in results[2].reason
    assert "measured here" in results[1].reason


def test_choose_when_verifying_is_too_slow_or_nothing_keeps_up():
    results = _results([0.0, 0.5, 0.9, 2.0])  # 0.3 + 0.5 + 0.1 > 0.75
    assert choose(results).name == "tiny.en alone"
    slow = _results([0.0, 0.5, 0.9, 2.0], drafter=0.9)
    choice = choose(slow)
    assert choice.name == "tiny.en alone" and "no installed configuration keeps up" in choice.reason
    nothing = choose(_results([0.0, 0.1, 0.2, 0.3], installed=(False,) * 4))
    assert nothing.name is None and "sotto models get" in nothing.reason
    assert results[1].busy == pytest.approx(0.9) and not results[1].keeps_up and BUDGET == 0.75


# -- saved ----------------------------------------------------------------------------------------
def test_save_and_load(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    assert load_calibration() is None
    results = _results([0.0, 0.1, 0.25, 0.7])
    choice = choose(results)
    cal = Calibration(date="2025-01-01 10:00", cpu="Some CPU", cores=2, device="cpu", compute_type="int8",
                      platform="Linux", language="en", target="de", budget=BUDGET, audio_s=23.0, results=results,
                      choice=choice.name, reason=choice.reason, settings=choice.settings,
                      predicted={"small": 0.65}, workload={"frames": 1112, "prompt_tokens": 14, "steps": 21})
    path = save_calibration(cal)
    assert path == tmp_path / "config" / "calibration.json"
    loaded = load_calibration()
    assert loaded == cal
    assert loaded.chosen() is not None and loaded.chosen().verifier == "whisper-base"
    data = json.loads(path.read_text())
    data["version"] = 0
    from app.cli import main

    assert main(["devices"]) == 0  # saved on "Some CPU": not this machine
    shown = capsys.readouterr().out
    assert choice.reason in shown and "measured on another machine: run `sotto calibrate` again" in shown
    path.write_text(json.dumps(data))
    assert load_calibration() is None  # an older layout is not read
    path.write_text("{not json")
    assert load_calibration() is None


# -- each bigger model's speed, where models are chosen --------------------------------------------
def _calibration(results, predicted):
    choice = choose(results)
    return Calibration(date="2025-01-01 10:00", cpu="Some CPU", cores=2, device="cpu", compute_type="int8",
                       platform="Linux", language="en", target="de", budget=BUDGET, audio_s=23.0, results=results,
                       choice=choice.name, reason=choice.reason, settings=choice.settings, predicted=predicted)


def test_each_verifier_speed_in_words_from_the_saved_check():
    """The ladder's result where the check has one (measured or predicted), else its shape's prediction
    (a multilingual model after an English check); the drafter's size has none; before any check,
    "not measured yet" with how to measure."""
    from core.asr.calibration import NOT_MEASURED, verifier_speed_words, verifier_speeds

    models = ["whisper-tiny.en", "whisper-base", "whisper-small.en", "whisper-small", "whisper-medium.en",
              "gemma-3-270m"]
    cal = _calibration(_results([0.0, 0.1, 0.25, 0.7]), {"base": 0.5, "small": 0.65, "medium": 1.1,
                                                         "large-v3-turbo": 1.4})
    speeds = verifier_speeds(cal, models)
    assert list(speeds) == ["whisper-base", "whisper-small.en", "whisper-small", "whisper-medium.en"]
    assert speeds["whisper-base"].measured and speeds["whisper-base"].busy == pytest.approx(0.5)
    assert not speeds["whisper-medium.en"].keeps_up and speeds["whisper-medium.en"].busy == pytest.approx(1.1)
    small = speeds["whisper-small"]  # not in the English ladder: its shape's prediction
    assert (small.busy, small.keeps_up, small.measured) == (0.65, True, False)
    words = verifier_speed_words(cal, models)
    assert words["whisper-small.en"] == "keeps up here as the verifier (0.65 busy s per s, predicted)"
    assert words["whisper-medium.en"] == "too slow here as the verifier (1.10 busy s per s, predicted)"
    assert words["whisper-base"] == "keeps up here as the verifier (0.50 busy s per s, measured)"
    assert speeds["whisper-medium.en"].cell() == "1.10 too slow (predicted)"
    assert verifier_speed_words(None, models) == {m: NOT_MEASURED for m in speeds}
    assert "Settings › Compute › Check again" in NOT_MEASURED and "`sotto calibrate`" in NOT_MEASURED


def test_the_settings_models_tab_shows_each_verifier_speed(qtbot, tmp_path, monkeypatch, store):
    """Settings › Models: every bigger model in the verifier's list carries its speed as the verifier,
    and the chosen one says it under the list too; before a check, that it is not measured yet."""
    from app.controllers.settings import verifier_fits
    from app.views.settings_panel import SettingsPanel
    from core.asr.calibration import NOT_MEASURED
    from core.settings import Settings

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    panel = SettingsPanel(Settings(), store.list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    panel.load(Settings().with_value("asr.verify_lines", True).with_value("asr.verifier", "whisper-small.en"))
    combo = panel.verifier_model.combo

    def label(name: str) -> str:
        return combo.itemText(combo.findData(name))

    panel.show_verifier_fit(verifier_fits())  # nothing saved yet
    assert label("whisper-medium.en").endswith(f"· {NOT_MEASURED}")
    assert NOT_MEASURED in panel.verifier_model.status.text()
    assert "·" not in label("whisper-tiny.en")  # the drafter's size verifies nothing
    save_calibration(_calibration(_results([0.0, 0.1, 0.25, 0.7]), {"base": 0.5, "small": 0.65, "medium": 1.1,
                                                                     "large-v3-turbo": 1.4}))
    panel.show_verifier_fit(verifier_fits())
    assert label("whisper-medium.en").endswith("· too slow here as the verifier (1.10 busy s per s, predicted)")
    assert label("whisper-small").endswith("· keeps up here as the verifier (0.65 busy s per s, predicted)")
    assert "keeps up here as the verifier (0.65 busy s per s, predicted)" in panel.verifier_model.status.text()
    assert combo.currentData() == "whisper-small.en"


def test_sotto_models_lists_each_verifier_speed(tmp_path):
    """`sotto models` (the real command, a subprocess) has a column with each bigger model's speed as the
    verifier from the saved check, and says how to measure it before one."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    from core.asr.calibration import NOT_MEASURED

    env = {**os.environ, "SOTTO_CONFIG_DIR": str(tmp_path / "config"), "SOTTO_DATA_DIR": str(tmp_path / "data")}

    def listing() -> dict[str, str]:
        proc = subprocess.run([sys.executable, "-m", "app", "models"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("whisper-")}
        assert "AS VERIFIER" in proc.stdout
        return rows | {"": proc.stdout}

    rows = listing()
    assert rows["whisper-medium.en"].endswith("not measured yet") and rows["whisper-tiny.en"].endswith("–")
    assert f"As verifier: {NOT_MEASURED}." in rows[""]
    cal = _calibration(_results([0.0, 0.1, 0.25, 0.7]), {"base": 0.5, "small": 0.65, "medium": 1.1,
                                                         "large-v3-turbo": 1.4})
    save_calibration(cal, tmp_path / "config" / "calibration.json")
    rows = listing()
    assert rows["whisper-medium.en"].endswith("1.10 too slow (predicted)")
    assert rows["whisper-small.en"].endswith("0.65 keeps up (predicted)")
    assert rows["whisper-base"].endswith("0.50 keeps up (measured)")
    assert "from the speed check of 2025-01-01 10:00" in rows[""] and "another machine" in rows[""]
    assert NOT_MEASURED not in rows[""]


# -- measured, end to end --------------------------------------------------------------------------
def test_stream_measurement_times_each_stage(store, translator_de):
    """The bundled tiny.en streams the demo once, base verifies its lines, Gemma translates them."""
    from core.asr import FasterWhisperEngine
    from core.asr.calibration import demo_audio, measure_stream
    from core.session.engines import streaming_options
    from core.settings import Settings

    drafter = FasterWhisperEngine(store.resolve("whisper-tiny.en"))
    verifier = FasterWhisperEngine(store.resolve("whisper-base"))
    seen = []
    t0 = time.perf_counter()
    times = measure_stream(drafter, verifier, streaming_options(Settings()), demo_audio(1), translator_de,
                           on_status=lambda message, fraction: seen.append(fraction))
    wall = time.perf_counter() - t0
    # the stages are apart: the verifier's decodes are not also counted as the drafter's (parts of one
    # interval on one clock add up to no more than it, however fast the machine)
    assert times.drafter_s + times.verifier_s + times.translator_s <= wall
    assert times.audio_s == pytest.approx(11.0, abs=0.1)
    assert times.lines >= 2 and len(times.calls) >= times.lines  # one verifier decode per line at least
    assert times.translated >= times.lines
    german = " ".join(t for _, t in times.translations)
    assert any(w in german.split() for w in ("Sie", "nicht", "Ihr", "Ihre", "Land", "fragen", "meine")), german
    assert 0 < times.drafter_s and 0 < times.verifier_s and 0 < times.translator_s
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert "country" in " ".join(call[3] for call in times.calls).lower()  # the verifier heard JFK


def test_calibration_can_be_stopped(store):
    """The desktop's Cancel: setting ``abort`` stops a calibration under way."""
    import threading

    from core.asr.calibration import calibrate
    from core.errors import Interrupted
    from core.session.engines import streaming_options
    from core.settings import Settings

    abort = threading.Event()
    seen = []

    def on_status(message: str, fraction: float | None) -> None:
        seen.append((message, fraction))
        if fraction is not None and fraction > 0.2:
            abort.set()

    with pytest.raises(Interrupted):
        calibrate(streaming_options(Settings()), store=store, plays=1, on_status=on_status, abort=abort)
    # it stopped within the stage it was in: the demo recording's captioning went no further, nothing was built
    assert seen[-1][0].startswith("Captioning the demo recording") and seen[-1][1] < 0.5
    assert not any(message.startswith("Building") for message, _ in seen)


def test_a_second_check_reuses_the_kept_proxies_and_rebuilds_a_damaged_one(store, tmp_path, monkeypatch):
    """The check keeps its random-weight models in the model cache, as it says: the next check loads them
    (the same files, untouched) and builds only one that does not load."""
    from core.asr.calibration import calibrate, proxy_dir
    from core.session.engines import streaming_options
    from core.settings import Settings

    monkeypatch.setenv("SOTTO_MODELS_DIR", str(tmp_path / "models"))  # an empty proxy cache; the store stays

    def check() -> list[str]:
        seen: list[str] = []
        calibrate(streaming_options(Settings()), store=store, device="cpu", plays=1, repeats=1,
                  on_status=lambda message, fraction: seen.append(message))
        return seen

    def files() -> dict[Path, tuple[int, int]]:
        return {f: (f.stat().st_ino, f.stat().st_mtime_ns) for f in proxy_dir().glob("*/model.bin")}

    assert str(proxy_dir()).startswith(str(tmp_path))
    first = check()
    kept = files()
    assert len(kept) == 8  # base, small, medium and large-v3-turbo with 1 and 2 layers
    assert "Building random-weight models of each verifier's shape (once; kept in the model cache)" in first
    damaged = sorted(kept)[0]
    damaged.write_bytes(b"not a model")
    second = check()
    assert "Loading the random-weight models of each verifier's shape kept in the model cache" in second
    assert not any(message.startswith("Building") for message in second)
    again = files()
    assert {f: v for f, v in again.items() if f != damaged} == {f: v for f, v in kept.items() if f != damaged}
    assert again[damaged] != kept[damaged] and damaged.stat().st_size > 1_000_000  # built again, whole


def test_sotto_calibrate_then_devices(tmp_path, monkeypatch, capsys):
    from app.cli import main

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    assert main(["devices"]) == 0
    assert "not calibrated yet: run `sotto calibrate`" in capsys.readouterr().out

    out_json = tmp_path / "calibration-copy.json"
    assert main(["calibrate", "--target", "none", "--quick", "--json", str(out_json)]) == 0
    printed = capsys.readouterr()
    data = json.loads(out_json.read_text())
    saved = load_calibration()
    assert saved is not None and saved.choice == data["choice"] and (tmp_path / "config" / "calibration.json").exists()
    rows = {r.name: r for r in saved.results}
    assert list(rows) == [r.name for r in ladder("en")]
    measured = [r.name for r in saved.results if r.measured]
    assert measured == ["tiny.en alone", "tiny.en verified by base"]  # small.en and medium.en are not installed
    alone, base, small, medium = saved.results
    assert alone.translator_s == 0 and alone.verifier_s == 0 and alone.drafter_s > 0
    assert base.drafter_s == alone.drafter_s and base.verifier_s > 0
    assert base.verifier_s < small.verifier_s < medium.verifier_s  # bigger verifiers cost more
    assert saved.predicted["large-v3-turbo"] > alone.busy
    assert saved.choice in (alone.name, base.name) and saved.reason.startswith(saved.choice)
    for name in rows:
        assert name in printed.out
    assert "predicted" in printed.out and "measured" in printed.out and f"Choice: {saved.reason}" in printed.out

    assert main(["devices"]) == 0
    shown = capsys.readouterr().out
    section = shown[shown.index("Engine (calibration):"):]
    assert saved.choice in section and saved.reason in section and "not calibrated" not in section


def test_rung_names_the_settings_the_app_reads():
    """The settings a choice names exist, and the values are accepted."""
    from core.settings import Settings

    settings = Settings()
    for rung in ladder("en") + ladder("de"):
        for key, value in Rung(rung.name, rung.drafter, rung.verifier).settings().items():
            settings = settings.with_value(key, str(value).lower() if isinstance(value, bool) else value)
    assert settings.asr.verify_lines is True and settings.asr.verifier == "whisper-medium"

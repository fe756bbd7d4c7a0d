"""Speaker labels (issue #50): the GE2E voice encoder in numpy against the original PyTorch modules,
its bundled weights through the model store, and speakers told apart online on real voices."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from core.errors import ModelError
from core.models import ModelStore
from core.speakers.mel import hz_to_mel, mel_filterbank, mel_frames, mel_to_hz
from core.speakers.model import MODEL_NAME, convert, load_encoder

ROOT = Path(__file__).resolve().parent.parent
ASR = ROOT.parent / "shared" / "data" / "asr"


@pytest.fixture(scope="module")
def encoder_store(tmp_path_factory) -> ModelStore:
    """A store of its own: the bundled voice encoder prepared from the installed package into it."""
    return ModelStore(root=tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def encoder(encoder_store):
    return load_encoder(encoder_store)


def _clip(name: str) -> np.ndarray:
    from core.audio import decode_file

    path = ASR / name
    if not path.is_file():
        pytest.skip(f"shared clip {path} is missing")
    return decode_file(path)


def test_filterbank_is_slaneys_mel_scale():
    """librosa.filters.mel(sr=16000, n_fft=400, n_mels=40) (htk=False, norm="slaney"), checked by the formula:
    the scale is linear (200/3 Hz a mel) to 1 kHz and logarithmic (27 mels per factor 6.4) above; each
    triangle rises from its lower edge to 1 at its centre (before the norm) and falls to its upper edge,
    and is scaled by 2 / (upper - lower) so its area in Hz is 1."""
    assert float(hz_to_mel(1000.0)) == pytest.approx(15.0)
    assert float(hz_to_mel(6400.0)) == pytest.approx(42.0)
    assert float(hz_to_mel(500.0)) == pytest.approx(7.5)
    assert float(mel_to_hz(hz_to_mel(3123.0))) == pytest.approx(3123.0)
    bank = mel_filterbank()
    assert bank.shape == (40, 201)
    edges = mel_to_hz(np.linspace(0.0, float(hz_to_mel(8000.0)), 42))
    freqs = np.arange(201) * 40.0  # 16000 / 400 Hz per bin
    for m in range(40):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        for k, f in enumerate(freqs):
            tri = (f - lo) / (mid - lo) if lo <= f <= mid else (hi - f) / (hi - mid) if mid < f <= hi else 0.0
            assert bank[m, k] == pytest.approx(max(tri, 0.0) * 2.0 / (hi - lo), rel=1e-5, abs=1e-9)


def test_mel_frames_match_torch_stft():
    """The frames are the filterbank over the power STFT: 400-point periodic Hann, hop 160, centred, reflected."""
    torch = pytest.importorskip("torch")
    wav = _clip("jfk.flac")[: 3 * 16000]
    spec = torch.stft(torch.from_numpy(wav), 400, 160, window=torch.hann_window(400, periodic=True), center=True,
                      pad_mode="reflect", return_complex=True).abs() ** 2
    expected = (torch.from_numpy(mel_filterbank()) @ spec).T.numpy()
    ours = mel_frames(wav)
    assert ours.shape == expected.shape == (301, 40)
    assert np.abs(ours - expected).max() <= 1e-5 * np.abs(expected).max()


def test_converted_encoder_matches_the_original_modules(encoder, encoder_store):
    """The numpy encoder, from the store's converted weights, gives the embeddings that nn.LSTM + nn.Linear
    with the checkpoint's state dict give, on real speech: cosine >= 0.99999 and max abs diff <= 1e-5."""
    torch = pytest.importorskip("torch")
    status = encoder_store.status(MODEL_NAME)
    assert status.ready and status.kind == "voice-encoder"
    source = Path(status.path) / "pretrained.pt"
    state = torch.load(source, map_location="cpu")["model_state"]
    lstm, linear = torch.nn.LSTM(40, 256, 3, batch_first=True), torch.nn.Linear(256, 256)
    lstm.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("lstm.")})
    linear.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("linear.")})
    for name in ("librispeech_1089-134686-0000.flac", "jfk.flac"):
        mels = encoder.window_mels(_clip(name))
        assert len(mels) >= 2
        with torch.no_grad():
            _, (hidden, _) = lstm(torch.from_numpy(mels))
            raw = torch.relu(linear(hidden[-1]))
            expected = (raw / raw.norm(dim=1, keepdim=True)).numpy()
        ours = encoder.forward(mels)
        assert np.abs(ours - expected).max() <= 1e-5
        assert (ours * expected).sum(axis=1).min() >= 0.99999


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing"])
def test_a_damaged_weight_file_gives_one_sentence(encoder_store, tmp_path, damage):
    source = encoder_store.resolve(MODEL_NAME) / "pretrained.pt"
    bad = tmp_path / "pretrained.pt"
    if damage == "garbage":
        bad.write_bytes(b"not a checkpoint at all" * 100)
    elif damage == "truncated":
        bad.write_bytes(source.read_bytes()[: 5_000_000])
    with pytest.raises(ModelError) as info:
        convert(bad, tmp_path / "out.npz")
    message = str(info.value)
    assert message.startswith("The voice encoder file") and message.count(". ") == 0 and "sotto models get" in message
    assert not (tmp_path / "out.npz").exists()


def test_a_damaged_store_copy_is_prepared_again_from_the_package(tmp_path):
    """A prepared copy whose file is cut short is noticed (its size) and made anew, verified by sha256."""
    store = ModelStore(root=tmp_path)
    first = load_encoder(store)
    copy = store.model_dir(MODEL_NAME) / "pretrained.pt"
    copy.write_bytes(copy.read_bytes()[:1000])
    (store.model_dir(MODEL_NAME) / "ge2e.npz").unlink()
    again = load_encoder(store)
    wav = _clip("jfk.flac")
    assert np.allclose(first.embed(wav), again.embed(wav))
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_shipped_copy_without_converted_weights_is_used_without_writing_to_the_users_cache(tmp_path):
    """An installed Sotto's models are read-only: the encoder converts in memory and prepares nothing in the
    user's cache (the installer test's promise), and embeds exactly as the store's own converted copy."""
    shipped = ModelStore(root=tmp_path / "shipped")
    own = load_encoder(shipped)
    (shipped.model_dir(MODEL_NAME) / "ge2e.npz").unlink()
    user = ModelStore(root=tmp_path / "user", bundled=tmp_path / "shipped")
    encoder = load_encoder(user)
    assert not (tmp_path / "user").exists() or not any((tmp_path / "user").iterdir())
    wav = _clip("jfk.flac")
    assert np.array_equal(own.embed(wav), encoder.embed(wav))


# -- speakers told apart online ---------------------------------------------------------------
def test_two_known_voices_get_two_labels(encoder):
    """Two LibriSpeech readers (1089 and 2412), their lines interleaved, get two labels, each reader one."""
    from core.speakers import SpeakerTracker, TrackerOptions

    a1, a2, a3 = (_clip(f"librispeech_{n}.flac") for n in ("1089-134686-0000", "1089-134691-0001", "1089-134686-0001"))
    b = _clip("librispeech_2412-153948-0000.flac")
    b1, b2 = b[: len(b) // 2], b[len(b) // 2:]
    tracker = SpeakerTracker(encoder, TrackerOptions(prefix="Them"))
    labels = [tracker.assign(x).label for x in (a1, b1, a2, b2, a3)]
    assert labels == ["Them 1", "Them 2", "Them 1", "Them 2", "Them 1"]
    assert tracker.count == 2
    tracker.rename(2, "Ana")
    assert tracker.assign(b1).label == "Ana"


def test_expected_count_caps_the_speakers(encoder):
    """A third voice (Kennedy's) opens a third speaker, unless two are expected: then the nearest takes the line."""
    from core.speakers import SpeakerTracker, TrackerOptions

    lines = [_clip(f"{n}.flac") for n in ("librispeech_1089-134686-0000", "librispeech_2412-153948-0000", "jfk")]
    free = SpeakerTracker(encoder)
    assert [free.assign(x).speaker for x in lines] == [1, 2, 3]
    capped = SpeakerTracker(encoder, TrackerOptions(max_speakers=2))
    assert [capped.assign(x).speaker for x in lines][:2] == [1, 2] and capped.count == 2


def test_a_real_call_gets_one_label_per_side(encoder):
    """A real telephone call (SpokenWOZ SNG0480, tune split), both sides mixed to mono as a meeting's "Them"
    stream hears them: its turns of at least half a second, in order, get two labels, and nearly every turn
    the label of its side (one label for everyone would be right for only the larger side's turns)."""
    from bench.speakers import read_turns
    from core.audio import decode_file
    from core.speakers import SpeakerTracker

    call = ROOT.parent / "shared" / "data" / "gathered" / "conversation" / "spokenwoz_SNG0480.flac"
    if not call.is_file():
        pytest.skip(f"gathered call {call} is missing")
    audio = decode_file(call)
    turns = [t for t in read_turns(call.with_name(call.stem + ".speakers.tsv")) if t.end - t.start >= 0.5]
    tracker = SpeakerTracker(encoder)
    got = [tracker.assign(audio[int(t.start * 16000):int(t.end * 16000)]).speaker for t in turns]
    truth = [t.speaker for t in turns]
    assert tracker.count == 2
    agree = max(sum((g == 1) == (t == side) for g, t in zip(got, truth, strict=True)) for side in ("A", "B"))
    majority = max(truth.count("A"), truth.count("B"))
    assert agree >= 0.9 * len(turns) > majority


# -- labels through the pipeline, the files and the History ----------------------------------------
def test_a_file_with_two_readers_is_labelled_and_a_rename_reaches_the_exports(qtbot, tiny_engine, encoder, tmp_path):
    """Two LibriSpeech readers one after the other (1089, 2412, 1089 again) captioned from a file with speaker
    labels on: the lines get "Speaker 1" and "Speaker 2" by reader; "Speaker 2" renamed "Ana" mid-run is Ana on
    screen, in source.srt, in the journal the History reads, and in its exports, for every line of that voice."""
    from conftest import Recorder, write_wav

    from core.audio import FileSource
    from core.session.history import export_entries, read_session
    from core.session.pipeline import CaptionPipeline
    from core.settings import Settings

    gap = np.zeros(16000, np.float32)
    parts = [_clip("librispeech_1089-134686-0000.flac"), gap, _clip("librispeech_2412-153948-0000.flac"), gap,
             _clip("librispeech_1089-134691-0001.flac")]
    second = (len(parts[0]) + len(gap)) / 16000, (len(parts[0]) + len(gap) + len(parts[2])) / 16000
    path = write_wav(tmp_path / "two-readers.wav", np.concatenate(parts))

    class RenameTheSecond(Recorder):
        def on_progress(self, progress):  # (on_view holds the pipeline's lock)
            super().on_progress(progress)
            if not renamed and self.views and any(line.voice == "Speaker 2" for line in self.views[-1].lines):
                renamed.append(pipe.rename_voice(2, "Ana"))

    renamed: list[str] = []
    settings = Settings().with_value("translation.target", "none").with_value("speakers.labels", True)
    rec = RenameTheSecond()
    out = tmp_path / "history" / "session"
    pipe = CaptionPipeline(settings, tiny_engine, None, rec, out, voice_encoder=encoder)
    summary = pipe.run(FileSource(path))
    assert summary.completed and renamed == ["Ana"]
    lines = rec.views[-1].lines
    assert len(lines) >= 3 and all(line.voice for line in lines)
    for line in lines:
        middle = (line.sentence.start + line.sentence.end) / 2
        assert line.voice == ("Ana" if second[0] <= middle <= second[1] else "Speaker 1"), line
    srt = (out / "source.srt").read_text(encoding="utf-8")
    assert "Speaker 1: " in srt and "Ana: " in srt and "Speaker 2" not in srt
    session = read_session(out)
    assert [e.label for e in session.entries] == [line.voice for line in lines]
    text = export_entries(session.entries, tmp_path / "export.txt", which="source").read_text(encoding="utf-8")
    assert text.count("Ana: ") == sum(line.voice == "Ana" for line in lines) and "Speaker 2" not in text
    vtt = export_entries(session.entries, tmp_path / "export.vtt", which="source").read_text(encoding="utf-8")
    assert "Ana: " in vtt and "Speaker 1: " in vtt

    # afterwards, in the History: "Rename a speaker…" names the first reader in the session and its files
    from app.controllers.history import HistoryController
    from core.errors import SottoError
    from core.session.history import CaptionHistory, rename_voice

    history = HistoryController(CaptionHistory(tmp_path / "history"))
    window = history.show()
    qtbot.addWidget(window)
    assert window.rename.isVisibleTo(window) and window._voices == {1: "Speaker 1", 2: "Ana"}
    window.rename_requested.emit(1, "Ben")
    said = [window.table.item(row, 1).text() for row in range(window.table.rowCount())]
    assert said and all(s.startswith(("Ben: ", "Ana: ")) for s in said)
    srt = (out / "source.srt").read_text(encoding="utf-8")
    assert "Ben: " in srt and "Ana: " in srt and "Speaker" not in srt
    with pytest.raises(SottoError, match="no speaker number 7"):
        rename_voice(out, 7, "Cy")


def test_in_real_time_labels_come_from_a_worker_and_every_line_gets_one(shared, tiny_engine, encoder, tmp_path):
    """In real time the labels are found on a worker thread (never on the caption loop); by the end every
    committed line has one, the journal has them, and the worker is gone."""
    import json
    import threading

    from conftest import Recorder

    from core.audio import FileSource
    from core.session.pipeline import CaptionPipeline
    from core.settings import Settings

    settings = Settings().with_value("translation.target", "none").with_value("speakers.labels", True)
    rec = Recorder()
    pipe = CaptionPipeline(settings, tiny_engine, None, rec, tmp_path, realtime=True, voice_encoder=encoder)
    summary = pipe.run(FileSource(shared / "asr" / "jfk.flac", realtime=True, speed=2.0))
    lines = rec.views[-1].lines
    assert summary.completed and lines and all(line.voice.startswith("Speaker ") for line in lines)
    records = [json.loads(x) for x in (tmp_path / "captions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["index"] for r in records if r["kind"] == "voice") == [line.sentence.index for line in lines]
    assert not any(t.name == "voice-labels" for t in threading.enumerate())


def test_the_overlay_shows_a_speaker_change_as_the_setting_says(qtbot):
    """Lines of a meeting's other side from two voices: "label" writes each voice's label before its line,
    "colour" a mark in a colour per voice before "Them:", "none" only "Them:"."""
    import dataclasses

    from app.views.overlay import VOICE_MARK, VOICE_STYLE, CaptionOverlay
    from core.settings import OverlaySettings
    from core.stream import CaptionLine, CaptionView, PartialLine, Sentence

    said = [("Them 1", 1, "Is the guest house near the centre?"), ("Them 2", 2, "It is on Trinity Street."),
            ("Them 1", 1, "Thank you.")]
    view = CaptionView([CaptionLine(Sentence(i, text, 2.0 * i, 2.0 * i + 1.5, "them"), voice=voice, voice_id=n)
                        for i, (voice, n, text) in enumerate(said)], [PartialLine(speaker="them")])
    shown = {}
    for style in ("label", "colour", "none"):
        overlay = CaptionOverlay(dataclasses.replace(OverlaySettings(), speaker_style=style, lines=8))
        qtbot.addWidget(overlay)
        overlay.resize(900, 400)
        overlay.show()
        qtbot.waitExposed(overlay)
        overlay.show_view(view)
        qtbot.waitUntil(lambda o=overlay: bool(o.painted))
        shown[style] = (overlay.painted[-1][0], overlay)
    assert shown["label"][0].splitlines() == [f"{v}: {t}" for v, _, t in said]
    assert shown["none"][0].splitlines() == [f"Them: {t}" for _, _, t in said]
    assert shown["colour"][0].splitlines() == [f"{VOICE_MARK}Them: {t}" for _, _, t in said]
    overlay = shown["colour"][1]
    colours = [overlay.pen_colour(run.style, "#ffffff").name() for line in overlay.painted_lines[-1][0]
               for run in line if run.style.startswith(VOICE_STYLE)]
    assert len(colours) == 3 and colours[0] == colours[2] != colours[1]


def test_the_settings_panel_shows_the_speaker_settings_and_asks_to_change_them(qtbot, tmp_path, monkeypatch):
    from app.views.settings_panel import SettingsPanel
    from core.settings import Settings

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    panel = SettingsPanel(Settings(), ModelStore().list(), [("", "System default")], cuda_available=False)
    qtbot.addWidget(panel)
    assert not panel.speaker_labels.isChecked() and panel.speaker_style.currentData() == "label"
    panel.load(Settings().with_value("speakers.labels", True).with_value("speakers.expected", 3)
               .with_value("overlay.speaker_style", "colour"))
    assert panel.speaker_labels.isChecked() and panel.speakers_expected.value() == 3
    assert panel.speaker_style.currentData() == "colour"
    for change, expected in ((lambda: panel.speaker_labels.setChecked(False), ["speakers.labels", False]),
                             (lambda: panel.speakers_expected.setValue(2), ["speakers.expected", 2]),
                             (lambda: panel.speaker_style.setCurrentIndex(panel.speaker_style.findData("none")),
                              ["overlay.speaker_style", "none"])):
        with qtbot.waitSignal(panel.change_requested) as blocker:
            change()
        assert blocker.args == expected


def test_in_a_meeting_only_the_other_side_is_told_apart(tiny_engine, encoder, tmp_path):
    """A meeting's two streams: the other side (two readers, 2412 then 1089) gets "Them 1" and "Them 2"; the
    user's own lines stay "Me" (the microphone is one person)."""
    from conftest import Recorder, write_wav

    from core.audio import FileSource
    from core.session.pipeline import CaptionPipeline
    from core.settings import Settings
    from core.stream import ME, THEM

    gap = np.zeros(16000, np.float32)
    them = write_wav(tmp_path / "them.wav", np.concatenate([_clip("librispeech_2412-153948-0000.flac"), gap,
                                                             _clip("librispeech_1089-134686-0000.flac")]))
    me = write_wav(tmp_path / "me.wav", _clip("librispeech_61-70968-0000.flac"))
    settings = Settings().with_value("translation.target", "none").with_value("speakers.labels", True)
    rec = Recorder()
    pipe = CaptionPipeline(settings, tiny_engine, None, rec, tmp_path / "out", voice_encoder=encoder)
    assert pipe.run_streams({THEM: FileSource(them), ME: FileSource(me)}).completed
    lines = rec.views[-1].lines
    ours = [line for line in lines if line.sentence.speaker == ME]
    theirs = [line for line in lines if line.sentence.speaker == THEM]
    assert ours and all(line.voice == "" and line.label == "Me" for line in ours)
    first = len(_clip("librispeech_2412-153948-0000.flac")) / 16000 + 0.5  # where the second reader starts
    readers = [{line.voice for line in theirs if (line.sentence.end <= first) == one} for one in (True, False)]
    # one label per reader (numbers need not follow: a voice split early and merged back leaves a gap)
    assert readers[0] == {"Them 1"} and len(readers[1]) == 1 and readers[1] != readers[0]
    srt = (tmp_path / "out" / "source.srt").read_text(encoding="utf-8")
    assert "Me: " in srt and "Them 1: " in srt and f"{readers[1].pop()}: " in srt


def test_sotto_caption_speakers_labels_a_file(tmp_path):
    """`sotto caption FILE --speakers 2` labels a mixed recording of two readers in the files it writes."""
    from conftest import write_wav
    from test_cli import sotto

    gap = np.zeros(16000, np.float32)
    path = write_wav(tmp_path / "two.wav", np.concatenate([_clip("librispeech_1089-134686-0000.flac"), gap,
                                                            _clip("librispeech_2412-153948-0000.flac")]))
    proc = sotto("caption", str(path), "--speakers", "2", "--target", "none", "--quiet", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    srt = (tmp_path / "o" / "source.srt").read_text(encoding="utf-8")
    assert "Speaker 1: " in srt and "Speaker 2: " in srt

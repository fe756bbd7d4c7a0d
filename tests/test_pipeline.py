"""The pipeline in real-time mode: worker threads, stale partials dropped, failures contained."""

from __future__ import annotations

import threading

import numpy as np
from conftest import Recorder

from core.audio import FileSource
from core.session.pipeline import CaptionPipeline, MessageLevel
from core.settings import Settings
from core.translate import LlamaTranslator, TranslatorOptions


def test_realtime_run_translates_every_sentence(shared, tiny_engine, translator_de, tmp_path):
    rec = Recorder()
    settings = Settings()
    source = FileSource(shared / "asr" / "jfk.flac", realtime=True, speed=1.5)
    pipe = CaptionPipeline(settings, tiny_engine, translator_de, rec, tmp_path, realtime=True)
    summary = pipe.run(source)
    assert summary.completed and summary.mode == "realtime"
    lines = rec.views[-1].lines
    assert lines and all(line.translation for line in lines)  # finished sentences are never dropped
    assert summary.latency_seconds.lag.count > 0
    assert summary.latency_seconds.sentence_on_screen.count == len(lines)
    assert any(p.lag is not None for p in rec.progress)
    # the translation worker thread is gone
    assert not any(t.name == "sotto-translate" for t in threading.enumerate())


def test_translator_failure_keeps_captions(shared, tiny_engine, store, tmp_path):
    # A real translator that cannot fit any prompt into its context fails on the first sentence.
    broken = LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(n_ctx=256))
    broken.options.max_new_tokens = 10_000
    broken.runner.n_ctx = 40
    rec = Recorder()
    pipe = CaptionPipeline(Settings(), tiny_engine, broken, rec, tmp_path)
    try:
        summary = pipe.run(FileSource(shared / "asr" / "jfk.flac"))
    finally:
        broken.close()
    assert summary.errors and "Captions continue without translation" in summary.errors[0]
    assert rec.messages and rec.messages[0][0] == "error" and rec.messages[0][0] is MessageLevel.ERROR
    assert summary.sentences >= 1 and "country" in (tmp_path / "source.srt").read_text().lower()


def test_fast_run_summary_journal_and_live_settings(shared, tiny_engine, store, tmp_path):
    """A fast run's summary and journal header come from the settings and what the stages counted; live
    settings reach the policy and the translator mid-run, and a start setting waits."""
    import json

    class ChangeAfterOneLine(Recorder):
        def on_progress(self, progress):  # (on_view holds the pipeline's lock)
            super().on_progress(progress)
            if self.views and self.views[-1].lines and not changed:
                changed.append(True)  # mask-k and β at once, a line length at the next start
                pipe.apply_settings(pipe.settings.with_value("captions.mask_k", 1)
                                    .with_value("translation.beta", 0.5).with_value("asr.max_line_words", 3))

    changed: list[bool] = []
    rec = ChangeAfterOneLine()
    # its own translator: the live change would otherwise outlast this test
    translator = LlamaTranslator(store.resolve("gemma-3-270m"), TranslatorOptions(target_lang="de",
                                                                                 prompt_style="few-shot"))
    pipe = CaptionPipeline(Settings(), tiny_engine, translator, rec, tmp_path)
    try:
        summary = pipe.run(FileSource(shared / "asr" / "jfk.flac"))
    finally:
        translator.close()
    assert translator.options.beta == 0.5 and "0.5" in summary.translation.engine
    assert summary.completed and summary.mode == "fast" and summary.latency_seconds is None
    assert summary.asr.engine == tiny_engine.name and summary.asr.model == "whisper-tiny.en"
    assert summary.asr.decodes > 0 and summary.audio_seconds > 10
    assert summary.translation is not None and summary.translation.model == "gemma-3-270m"
    assert summary.translation.target == "de" and summary.translation.calls >= summary.sentences
    assert summary.sentences == len(rec.views[-1].lines) == (tmp_path / "source.srt").read_text().count("-->")
    assert pipe.policy.mask_k == 1 and summary.mask_k == 1  # live
    assert all(len(line.sentence.text.split()) > 3 for line in rec.views[-1].lines[1:]), "max_line_words waits"
    header = json.loads((tmp_path / "captions.jsonl").read_text().splitlines()[0])
    assert header["kind"] == "session" and header["source"] == "jfk.flac"
    assert (header["language"], header["target"]) == ("en", "de")
    assert (header["asr_model"], header["translation_model"]) == ("whisper-tiny.en", "gemma-3-270m")
    assert json.loads((tmp_path / "summary.json").read_text())["sentences"] == summary.sentences
    notes = [text for level, text in rec.messages if level is MessageLevel.INFO]
    assert notes and notes[0].startswith("Translations by gemma-3-270m, the small bundled model")


def test_stop_keeps_what_was_captioned(shared, tiny_engine, tmp_path):
    """Stopped mid-file (as soon as two lines are finished, whatever the machine's speed): not
    completed, and every line captioned so far is in the SRT file and the summary."""

    class StopAfterTwoLines(Recorder):
        def on_view(self, view):
            super().on_view(view)
            if len(view.lines) >= 2:
                pipe.stop()

    rec = StopAfterTwoLines()
    pipe = CaptionPipeline(Settings().with_value("translation.target", "none"), tiny_engine, None, rec, tmp_path,
                           realtime=True)
    source = FileSource(shared / "asr_long" / "ljspeech_LJ001-0001_to_0032_concat_16k.flac", realtime=True, speed=2.0)
    summary = pipe.run(source)
    assert not summary.completed
    assert summary.audio_seconds < 0.5 * source.duration  # stopped well before the end of the 231 s reading
    assert summary.sentences >= 2
    assert (tmp_path / "source.srt").read_text().count("-->") == summary.sentences
    assert (tmp_path / "summary.json").exists()


def test_terminal_display_plain_output(shared, tiny_engine, translator_de):
    import io

    from app.terminal import TerminalDisplay

    out = io.StringIO()
    display = TerminalDisplay(out, color=False, show_translation=True)
    pipe = CaptionPipeline(Settings(), tiny_engine, translator_de, display)
    pipe.run(FileSource(shared / "asr" / "jfk.flac"))
    display.close()
    text = out.getvalue()
    assert "country" in text.lower() and "  → " in text
    assert "\033[" not in text  # no escape codes into a pipe


def test_service_captions_without_translation_when_the_translator_cannot_load(shared, tmp_path, monkeypatch):
    """A broken translation model: the user is told, and captions run anyway."""
    from core.session.service import CaptionService
    from core.settings import Settings

    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 100)

    class Listener:
        def __init__(self):
            self.views, self.messages = [], []

        def on_view(self, view):
            self.views.append(view)

        def on_progress(self, progress):
            pass

        def on_message(self, level, text):
            self.messages.append((level, text))

        def on_state(self, state, detail):
            pass

        def on_status(self, message, fraction):
            pass

    listener = Listener()
    settings = (Settings().with_value("translation.model", str(broken))
                .with_value("audio.source", str(shared / "asr" / "jfk.flac")))
    service = CaptionService(settings, listener)
    try:
        service.start()
        assert service.wait_idle(120)
    finally:
        service.shutdown()
    assert any(level == "error" and "broken.gguf" in text and "without translation" in text
               for level, text in listener.messages), listener.messages
    assert listener.views and "country" in " ".join(line.sentence.text for line in listener.views[-1].lines).lower()
    assert service.last_session is not None and service.last_session.summary.translation is None


def test_realtime_decodes_end_on_the_chunk_grid_and_no_audio_is_lost(shared, tiny_engine, tmp_path):
    """In real time a read ends wherever the thread woke up; the decodes still end on the grid of
    ``asr.min_chunk_s`` counted from the start, as fast mode's do, so that two runs of one recording
    hear the same windows wherever decoding keeps up (issue #48). Nothing read is left undecoded."""
    from core.audio.convert import SAMPLE_RATE

    pushed: list[int] = []

    class Counting(CaptionPipeline):
        def _push(self, stream, chunk):
            pushed.append(chunk.size)
            super()._push(stream, chunk)

    settings = Settings().with_value("asr.min_chunk_s", 0.4)
    source = FileSource(shared / "asr" / "jfk.flac", realtime=True, speed=2.0)
    summary = Counting(settings, tiny_engine, None, Recorder(), tmp_path, realtime=True).run(source)
    assert summary.completed
    grid = round(0.4 * SAMPLE_RATE)
    ends = np.cumsum(pushed)
    assert len(pushed) > 5 and all(end % grid == 0 for end in ends[:-1]), (grid, pushed)
    assert ends[-1] == source.audio.size  # the last fraction of a chunk is decoded at the end
    assert "country" in (tmp_path / "source.srt").read_text().lower()

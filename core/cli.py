"""The ``sotto`` command line.

Errors a user can cause end with one plain sentence on stderr and a non-zero
exit status; the technical detail goes to the log file.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from . import __version__, logger
from .errors import SottoError
from .logs import log_file, setup_logging

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130


def _status_printer(quiet: bool = False):
    """A callback drawing 'message [####....] 42%' on stderr for long work."""
    state = {"last": "", "t": 0.0}
    tty = sys.stderr.isatty()

    def show(message: str, fraction: float | None) -> None:
        if quiet:
            return
        now = time.monotonic()
        if fraction is not None and tty:
            if now - state["t"] < 0.1 and fraction < 1.0:
                return
            state["t"] = now
            bar = "#" * int(30 * fraction) + "." * (30 - int(30 * fraction))
            sys.stderr.write(f"\r{message} [{bar}] {100 * fraction:3.0f}%")
            if fraction >= 1.0:
                sys.stderr.write("\n")
            sys.stderr.flush()
        elif message != state["last"]:
            sys.stderr.write(message + ("" if fraction is None else "…") + "\n")
        state["last"] = message

    return show


# -- caption / run ----------------------------------------------------------------------------
def _cmd_caption(args: argparse.Namespace) -> int:
    from .audio.sources import open_source
    from .engines import create_asr_engine, create_translator
    from .models.store import ModelStore
    from .pipeline import CaptionPipeline
    from .settings import load_settings
    from .terminal import TerminalDisplay

    settings = load_settings()
    overrides = {
        "translation.target": args.target,
        "asr.model": args.model,
        "translation.model": args.translator,
        "captions.mask_k": args.mask_k,
        "captions.mask_mode": args.mask_mode,
        "translation.beta": args.beta,
        "translation.engine": args.translate_engine,
        "audio.channel": args.channel,
        "asr.engine": args.asr_engine,
    }
    for key, value in overrides.items():
        if value is not None:
            settings = settings.with_value(key, value)
    if args.no_vad:
        settings = settings.with_value("asr.vad", False)
    source_spec = args.input
    if source_spec == "mic" and settings.audio.device:
        source_spec = f"mic:{settings.audio.device}"
    source = open_source(source_spec, realtime=args.realtime, channel=settings.audio.channel)
    store = ModelStore()
    status = _status_printer(args.quiet)
    asr = create_asr_engine(settings, store, status)
    translator = create_translator(settings, store, status)
    out_dir = Path(args.out) if args.out else None
    display = TerminalDisplay(show_translation=translator is not None) if not args.quiet else None
    pipeline = CaptionPipeline(settings, asr, translator, display, out_dir, realtime=args.realtime or source_spec.startswith("mic"))
    if not args.quiet:
        target = settings.translation.target
        what = f"{source.name}" + (f" → {target}" if translator else "")
        sys.stderr.write(f"Captioning {what} (Ctrl+C stops; captions so far are kept)\n")
    stopped = _stop_on_signals(pipeline)
    try:
        summary = pipeline.run(source)
    except KeyboardInterrupt:
        if display:
            display.close()
        sys.stderr.write("\nStopped." + (f" Captions so far are in {out_dir}.\n" if out_dir else "\n"))
        return EXIT_INTERRUPTED
    finally:
        if translator is not None:
            translator.close()
    if display:
        display.close()
    if not args.quiet:
        _print_summary(summary, out_dir)
    if summary["errors"]:
        return EXIT_ERROR
    return EXIT_INTERRUPTED if stopped.is_set() else 0


def _stop_on_signals(pipeline) -> threading.Event:
    """Ctrl+C or SIGTERM: finish gracefully (captions and files kept); a second Ctrl+C aborts."""
    import signal

    stopped = threading.Event()

    def handler(signum, frame):
        if stopped.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stopped.set()
        sys.stderr.write("\nStopping… (finishing the last line; Ctrl+C again to abort)\n")
        pipeline.stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
    return stopped


def _print_summary(summary: dict, out_dir: Path | None) -> None:
    audio = summary["audio_seconds"]
    parts = [f"{audio:.1f} s of audio in {summary['wall_seconds']:.1f} s"]
    if summary.get("cpu_seconds_per_audio_second") is not None:
        parts.append(f"{summary['cpu_seconds_per_audio_second']:.2f} CPU-s per audio-s")
    ne = summary["normalized_erasure"]
    parts.append(f"NE source {ne['ne_source_display']:.2f}")
    if "ne_translation_display" in ne:
        parts.append(f"NE translation {ne['ne_translation_display']:.2f}")
    sys.stderr.write("Done: " + ", ".join(parts) + ".\n")
    if summary["no_speech"]:
        sys.stderr.write(f"No speech was detected in {summary['source']}.\n")
    if out_dir:
        sys.stderr.write(f"Captions written to {out_dir}.\n")


def _cmd_run(args: argparse.Namespace) -> int:
    """The desktop app; with no display (or ``--terminal``), live terminal captions instead."""
    if not args.terminal:
        from app.main import display_problem

        problem = display_problem()
        if problem is None:
            return _cmd_app(args)
        sys.stderr.write(f"{problem}, so Sotto shows its captions here in the terminal instead.\n")
    return _cmd_terminal_captions(args)


def _cmd_terminal_captions(args: argparse.Namespace) -> int:
    """Live terminal captions of ``--source`` (default: the bundled demo sample)."""
    from .paths import demo_sample

    source = args.source or str(demo_sample())
    args.input = source
    args.realtime = not (source == "mic" or source.startswith("mic:"))
    return _cmd_caption(args)


def _cmd_app(args: argparse.Namespace) -> int:
    from app.main import display_problem, run_app

    problem = display_problem()
    if problem is not None:
        raise SottoError(f"{problem}; `sotto run --terminal` shows captions in the terminal.")
    return run_app()


def _cmd_screenshot(args: argparse.Namespace) -> int:
    from app.main import screenshot

    paths = screenshot(Path(args.dir), Path(args.recording) if args.recording else None,
                       _status_printer(args.quiet))
    for path in paths:
        print(path)
    return 0


def _cmd_desktop_entry(args: argparse.Namespace) -> int:
    from app.main import desktop_entry, install_desktop_entry

    if args.install:
        path = install_desktop_entry()
        if not args.quiet:
            print(f"Installed {path}; Sotto is now in your applications menu.")
        return 0
    print(desktop_entry(), end="")
    return 0


# -- models -----------------------------------------------------------------------------------
def _cmd_models(args: argparse.Namespace) -> int:
    from .models.store import ModelStore, human_size

    store = ModelStore()
    action = args.action or "list"
    if action == "list":
        rows = store.list()
        explain = {
            "ready": "ready",
            "bundled": "bundled (prepared on first use)",
            "downloadable": "not downloaded",
            "partial": "partly downloaded (get resumes)",
            "corrupt": "damaged (get fetches it again)",
        }
        width = max(len(r.name) for r in rows)
        print(f"{'MODEL'.ljust(width)}  {'KIND':11}  {'SIZE':>8}  STATUS")
        for r in rows:
            print(f"{r.name.ljust(width)}  {r.kind:11}  {human_size(r.size):>8}  {explain.get(r.state, r.state)}")
        print(f"\nStore: {store.root}")
        return 0
    if action == "prepare":
        names = store.prepare_all_bundled(_status_printer(args.quiet))
        if not args.quiet:
            print(f"Bundled models ready in {store.root}: {', '.join(names) or 'none installed'}")
        return 0
    if not args.name:
        raise SottoError(f"`sotto models {action}` needs a model name; `sotto models` lists them.")
    if action == "get":
        status = store.status(args.name) if not args.name.startswith("hf:") else None
        if status is not None and status.state == "bundled":
            store.resolve(args.name, _status_printer(args.quiet))
        elif status is None or status.state != "ready":
            cancel = threading.Event()
            printer = _status_printer(args.quiet)

            def progress(fname: str, p) -> None:
                label = f"Downloading {fname}"
                printer(label, p.fraction if p.fraction is not None else None)

            try:
                store.download(args.name, progress, cancel)
            except KeyboardInterrupt:
                cancel.set()
                sys.stderr.write("\nDownload stopped; run the same command again to resume.\n")
                return EXIT_INTERRUPTED
        print(f"{args.name} is ready: {store.resolve(args.name)}")
        return 0
    if action == "path":
        print(store.resolve(args.name))
        return 0
    if action == "verify":
        from .models.download import sha256_file

        path = store.resolve(args.name)
        manifest = json.loads((store.model_dir(args.name) / "manifest.json").read_text())
        bad = [f for f, info in manifest["files"].items()
               if sha256_file(store.model_dir(args.name) / f) != info["sha256"]]
        if bad:
            raise SottoError(f"The model '{args.name}' is damaged ({', '.join(bad)}); run `sotto models get {args.name}`.")
        print(f"{args.name} verified: {path}")
        return 0
    if action == "remove":
        store.remove(args.name)
        print(f"Removed {args.name} from {store.root}.")
        return 0
    raise SottoError(f"Unknown models action '{action}'.")


def _cmd_bench(args: argparse.Namespace) -> int:
    import importlib

    return importlib.import_module(f"bench.{args.which}").main(args.rest)


# -- devices / settings -----------------------------------------------------------------------
def _cmd_devices(args: argparse.Namespace) -> int:
    from .audio.sources import list_input_devices

    devices = list_input_devices()
    if not devices:
        print("No audio input devices found.")
        return 0
    for d in devices:
        mark = "*" if d.is_default else " "
        print(f"{mark} {d.index:3d}  {d.name}  ({d.channels} ch, {d.default_samplerate:.0f} Hz, {d.hostapi})")
    print("\n* = default input. Use `sotto caption mic:NAME` or set audio.device.")
    return 0


def _cmd_settings(args: argparse.Namespace) -> int:
    from .settings import load_settings, save_settings, settings_path

    if args.action == "path":
        print(settings_path())
        return 0
    settings = load_settings()
    if args.action == "set":
        if args.key is None or args.value is None:
            raise SottoError("Use `sotto settings set SECTION.KEY VALUE`, e.g. `sotto settings set captions.mask_k 3`.")
        settings = settings.with_value(args.key, args.value)
        path = save_settings(settings)
        print(f"{args.key} = {args.value} (saved to {path})")
        return 0
    import tomli_w

    print(tomli_w.dumps(settings.to_dict()), end="")
    return 0


# -- entry point ----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(prog="sotto", description="Live captions and translation, on your own machine.")
    parser.add_argument("--version", action="version", version=f"sotto {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="also log to the terminal")
    sub = parser.add_subparsers(dest="command")

    def caption_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--target", choices=None, help="translate into this language (de, ja, zh, …) or 'none'")
        p.add_argument("--model", help="speech model (name from `sotto models` or a path)")
        p.add_argument("--translator", help="translation model (name, hf:owner/repo/file.gguf, or a .gguf path)")
        p.add_argument("--mask-k", type=int, help="hide the last K unstable words of a partial line (0-10)")
        p.add_argument("--mask-mode", choices=("display", "draft"),
                       help="mask-k on screen only (default) or trimmed from the translator's draft")
        p.add_argument("--beta", type=float,
                       help="SSBD bias toward the previous translation, 0-1 (0 = exact greedy; higher = steadier, faster)")
        p.add_argument("--translate-engine", choices=("ssbd", "ar"),
                       help="ssbd (default) or plain autoregressive re-translation")
        p.add_argument("--channel", choices=("mix", "left", "right"), help="which channel of a stereo input")
        p.add_argument("--asr-engine", choices=("faster-whisper", "speculative"),
                       help="one speech model, or the speculative drafter + verifier pair (asr.drafter, asr.verifier)")
        p.add_argument("--no-vad", action="store_true", help="decode silence too (no voice activity detection)")
        p.add_argument("--quiet", action="store_true", help="no live display")

    p = sub.add_parser("caption", help="caption an audio file (or 'mic') in the terminal")
    p.add_argument("input", help="an audio file, 'mic' for the default microphone, or 'mic:NAME'")
    p.add_argument("--realtime", action="store_true", help="replay a file in real time (as if it were live)")
    p.add_argument("--out", help="write captions.jsonl, source.srt, translation.srt and summary.json here")
    caption_options(p)
    p.set_defaults(func=_cmd_caption)

    p = sub.add_parser("run", help="the desktop app (terminal captions when there is no display)")
    p.add_argument("--terminal", action="store_true", help="captions in the terminal instead of the app")
    p.add_argument("--source", help="with --terminal or no display: a file, 'mic' or 'mic:NAME' (default: the demo)")
    caption_options(p)
    p.set_defaults(func=_cmd_run, out=None)

    p = sub.add_parser("app", help="the desktop app (needs a display)")
    p.set_defaults(func=_cmd_app)

    p = sub.add_parser("screenshot", help="render the overlay and settings panel to DIR/overlay.png, settings.png")
    p.add_argument("dir")
    p.add_argument("--recording", help="the recording to caption (default: a shared reading)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_screenshot)

    p = sub.add_parser("desktop-entry", help="print (or --install) the Linux .desktop launcher")
    p.add_argument("--install", action="store_true", help="write it to ~/.local/share/applications")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_desktop_entry)

    p = sub.add_parser("models", help="list, prepare, download or check models")
    p.add_argument("action", nargs="?", choices=("list", "prepare", "get", "path", "verify", "remove"))
    p.add_argument("name", nargs="?")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("bench", help="benchmarks (see docs/BENCHMARKS.md)")
    p.add_argument("which", choices=("translate", "asr", "app", "pipeline"))
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("devices", help="list audio input devices")
    p.set_defaults(func=_cmd_devices)

    p = sub.add_parser("settings", help="show or change settings")
    p.add_argument("action", nargs="?", choices=("show", "set", "path"), default="show")
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?")
    p.set_defaults(func=_cmd_settings)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(console_level=logging.INFO if args.verbose else None)
    os.environ.setdefault("KMP_WARNINGS", "0")
    if not getattr(args, "func", None):
        args = parser.parse_args(["run", *(argv or [])])
    logger.info("sotto %s: %s", __version__, " ".join(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except SottoError as exc:
        logger.error("%s", exc, exc_info=True)
        sys.stderr.write(f"sotto: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("\nStopped.\n")
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one sentence here, the traceback in the log
        logger.exception("unexpected error")
        sys.stderr.write(f"sotto: unexpected error ({type(exc).__name__}: {exc}); details are in {log_file()}.\n")
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())

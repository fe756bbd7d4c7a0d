"""The ``sotto`` command line: parse the arguments and hand them to the front door they name.

Errors a user can cause end with one plain sentence on stderr and a non-zero
exit status; the technical detail goes to the log file.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from core import __version__, logger
from core.errors import SottoError
from core.logs import log_file, setup_logging
from core.settings import ASREngineKind, TranslationEngineKind

from . import commands, terminal
from .terminal import EXIT_ERROR, EXIT_INTERRUPTED

EXIT_USAGE = 2
EXIT_BUG = 3


def _cmd_run(args: argparse.Namespace) -> int:
    """The desktop app; with no display (or ``--terminal``), live terminal captions instead."""
    if not args.terminal:
        from .main import display_problem

        problem = display_problem()
        if problem is None:
            return _cmd_app(args)
        sys.stderr.write(f"{problem}, so Sotto shows its captions here in the terminal instead.\n")
    from core.audio.sources import is_live
    from core.paths import demo_sample

    source = args.source or str(demo_sample())  # live terminal captions of --source (default: the demo)
    args.input = source
    args.realtime = not is_live(source)
    return terminal.caption(args)


def _cmd_app(args: argparse.Namespace) -> int:
    from .main import display_problem, run_app

    problem = display_problem()
    if problem is not None:
        raise SottoError(f"{problem}; `sotto run --terminal` shows captions in the terminal.")
    return run_app()


def _cmd_screenshot(args: argparse.Namespace) -> int:
    from .screenshot import screenshot

    paths = screenshot(Path(args.dir), Path(args.recording) if args.recording else None,
                       terminal.status_printer(args.quiet))
    for path in paths:
        print(path)
    return 0


def _cmd_desktop_entry(args: argparse.Namespace) -> int:
    from .main import desktop_entry, install_desktop_entry

    if args.install:
        path = install_desktop_entry()
        if not args.quiet:
            print(f"Installed {path}; Sotto is now in your applications menu.")
        return 0
    print(desktop_entry(), end="")
    return 0


def _seconds(text: str) -> float:
    """A positive number of seconds (for --stop-after)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got '{text}'")
    return value


def _cmd_self_test(args: argparse.Namespace) -> int:
    from .selftest import self_test

    return self_test()


def _cmd_bench(args: argparse.Namespace) -> int:
    import importlib

    return importlib.import_module(f"bench.{args.which.replace('-', '_')}").main(args.rest)


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
        p.add_argument(
            "--beta",
            type=float,
            help="SSBD bias toward the previous translation, 0-1 (0 = exact greedy; higher = steadier, faster)",
        )
        p.add_argument("--translate-engine", choices=[k.value for k in TranslationEngineKind],
                       help="ssbd (default) or plain autoregressive re-translation")
        p.add_argument("--channel", choices=("mix", "left", "right"), help="which channel of a stereo input")
        p.add_argument("--asr-engine", choices=[k.value for k in ASREngineKind],
                       help="one speech model, or the speculative drafter + verifier pair (asr.drafter, asr.verifier)")
        p.add_argument("--no-vad", action="store_true", help="decode silence too (no voice activity detection)")
        p.add_argument("--speakers", type=int, nargs="?", const=0, metavar="N",
                       help="label who speaks (a meeting's other side: Them 1, Them 2, …; one source: Speaker 1, "
                            "…), expecting N speakers if given")
        p.add_argument("--quiet", action="store_true", help="no live display")

    p = sub.add_parser("caption", help="caption an audio file (or 'mic') in the terminal")
    p.add_argument("input", help="an audio file, 'mic' for the default microphone, 'mic:NAME', "
                                 "'system' for what the computer plays, 'system:OUTPUT', or 'both' "
                                 "(the microphone as 'me' and what the computer plays as 'them')")
    p.add_argument("--realtime", action="store_true", help="replay a file in real time (as if it were live)")
    p.add_argument("--stop-after", type=_seconds, metavar="SECONDS",
                   help="stop after this many seconds (live sources), keep everything, exit 0")
    p.add_argument("--out", help="write captions.jsonl, source.srt, translation.srt and summary.json here")
    caption_options(p)
    p.set_defaults(func=terminal.caption)

    p = sub.add_parser("run", help="the desktop app (terminal captions when there is no display)")
    p.add_argument("--terminal", action="store_true", help="captions in the terminal instead of the app")
    p.add_argument("--source", help="with --terminal or no display: a file, 'mic' or 'mic:NAME' (default: the demo)")
    caption_options(p)
    p.set_defaults(func=_cmd_run, out=None, stop_after=None)

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

    p = sub.add_parser("models", help="list, prepare, download or check models; advise: which translation model "
                                        "suits this machine (measured)")
    p.add_argument("action", nargs="?", choices=("list", "prepare", "get", "path", "verify", "remove", "advise"))
    p.add_argument("name", nargs="?")
    proxies = p.add_mutually_exclusive_group()
    proxies.add_argument("--proxies", action="store_true",
                         help="advise: time the bigger translators' random-weight models of their shape again "
                              "(done once per machine otherwise)")
    proxies.add_argument("--no-proxies", action="store_true",
                         help="advise: do not time the bigger translators (their stored or estimated speeds are used)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=commands.models)

    p = sub.add_parser("translate", help="translate a text file line by line, or an .srt/.vtt file cue by cue, "
                                         "as the app translates finished sentences")
    p.add_argument("file", help="a text file (one sentence a line) or subtitles (.srt, .vtt)")
    p.add_argument("--target", required=True, help="the language to translate into (de, ja, zh, …)")
    p.add_argument("--out", help="write the translation here (default: stdout)")
    p.add_argument("--translator", help="translation model (name, hf:owner/repo/file.gguf, or a .gguf path)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=commands.translate)

    p = sub.add_parser("bench", help="benchmarks (see docs/BENCHMARKS.md)")
    p.add_argument("which", choices=("translate", "prompts", "asr", "app", "pipeline", "live", "masks", "soak",
                                        "bias", "encoder", "loops", "verified", "threads", "gpu", "gpu-stream",
                                        "meeting", "speakers"))
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("calibrate", help="time the speech configurations on this machine and choose the most "
                                         "accurate one that keeps up (saved; `sotto devices` shows it)")
    p.add_argument("--target", help="translation language timed with it (de, ja, …, or 'none'; default: the "
                                    "settings')")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the speech models are timed (auto: CUDA if there is one)")
    p.add_argument("--quick", action="store_true", help="the demo recording once and fewer timing rounds")
    p.add_argument("--json", metavar="FILE", help="also write the result here")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--apply", action="store_true", help="also change the settings to use the choice")
    p.set_defaults(func=commands.calibrate)

    p = sub.add_parser("devices", help="list audio input devices")
    p.set_defaults(func=commands.devices)

    p = sub.add_parser("settings", help="show or change settings")
    p.add_argument("action", nargs="?", choices=("show", "set", "path"), default="show")
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?")
    p.set_defaults(func=commands.settings)

    p = sub.add_parser("self-test")  # hidden (not in --help): checks an installation, for support and installers
    p.set_defaults(func=_cmd_self_test)
    sub._choices_actions.pop()  # argparse lists a subcommand in the help unless it is taken out here
    sub.metavar = "{" + ",".join(name for name in sub.choices if name != "self-test") + "}"
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

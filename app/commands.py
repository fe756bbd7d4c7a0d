"""The small commands of ``sotto``: models, audio devices, settings."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from core.errors import SottoError

from .terminal import EXIT_INTERRUPTED, status_printer


def _print_advice(advice) -> None:
    print(f"\nAdvised translation model for this machine: {advice.model}. {advice.reason}")
    print(f"  Languages: {advice.languages}.")
    if advice.model != "gemma-3-270m":
        print(f"  Get it with `sotto models get {advice.model}`, then `sotto settings set translation.model "
              f"{advice.model}` (or choose it in Settings › Models).")
    if not advice.measured:
        print("  (Speeds estimated from the core count; `sotto models advise` times the bundled model, and the "
              "bigger ones with random-weight models of their shape.)")


def _print_speeds(machine) -> None:
    from core.models.advice import LIVE_TOKENS_PER_S, proxy_records, speed_notes

    records = proxy_records()
    print(f"\nTranslation speed here (output tokens per second of model time; live captions need "
          f"{LIVE_TOKENS_PER_S:.0f}):")
    notes = speed_notes(machine)
    width = max(len(name) for name in notes)
    for name, note in notes.items():
        when = f", {records[name]['date']}" if name in records else ""
        print(f"  {name.ljust(width)}  {note.removesuffix(')')}{when})")


def _measure_proxies(settings, quiet: bool, models: list[str] | None = None) -> None:
    """Time the catalogue translators' random-weight proxies here (``models``; all if None) and store their
    speeds."""
    from dataclasses import asdict

    from core.models.advice import record_proxy_speeds
    from core.translate.proxy import measure

    if not quiet:
        print("Measuring the bigger translators with random-weight models of their shape (the first time builds "
              "them: a few minutes)…", file=sys.stderr)
    try:
        speeds = measure(models, n_threads=settings.translation.n_threads,
                         n_gpu_layers=settings.translation.n_gpu_layers, on_status=status_printer(quiet))
    except SottoError as exc:  # no room for the proxies, a build that fails: the advice goes on without them
        print(f"{exc} The bigger translators' speeds stay estimated.", file=sys.stderr)
        return
    record_proxy_speeds({s.model: asdict(s) for s in speeds})


def models(args: argparse.Namespace) -> int:
    from core.models.advice import BUNDLED, advise, proxy_records, record_speed, this_machine
    from core.models.store import ModelStore, human_size

    store = ModelStore()
    action = args.action or "list"
    if action == "list":
        from core.asr.calibration import NOT_MEASURED, load_calibration, same_machine, verifier_speeds

        rows = store.list()
        cal = load_calibration()
        speeds = verifier_speeds(cal, [r.name for r in rows])
        width = max(len(r.name) for r in rows)
        state = max(len("STATUS"), *(len(r.state_words) for r in rows))
        print(f"{'MODEL'.ljust(width)}  {'KIND':11}  {'SIZE':>8}  {'STATUS'.ljust(state)}  AS VERIFIER (busy s per s)")
        for r in rows:
            speed = speeds[r.name].cell() if speeds.get(r.name) else "not measured yet" if r.name in speeds else "–"
            print(f"{r.name.ljust(width)}  {r.kind:11}  {human_size(r.size):>8}  {r.state_words.ljust(state)}  "
                  f"{speed}")
        if cal is None:
            print(f"\nAs verifier: {NOT_MEASURED}.")
        else:
            drafter = cal.results[0].drafter.removeprefix("whisper-") if cal.results else "the drafter"
            translating = "" if cal.target == "none" else f", translating into {cal.target}"
            print(f"\nAs verifier: seconds the models work per second of speech with {drafter} streaming and each "
                  f"model verifying its lines{translating}, from the speed check of {cal.date} (keeps up at "
                  f"{cal.budget:g} or less).")
            if not same_machine(cal):
                print("That check was made on another machine: run `sotto calibrate` again.")
        print(f"Store: {store.root}")
        _print_advice(advise())
        return 0
    if action == "advise":
        path = store.resolve(BUNDLED, status_printer(args.quiet))
        if not args.quiet:
            print("Measuring how fast this machine translates with the bundled model…", file=sys.stderr)
        from core.translate.translator import measure_speed

        tokens, seconds = measure_speed(path)
        record_speed(BUNDLED, tokens, seconds)
        from core.translate.proxy import SHAPES

        unmeasured = [name for name in SHAPES if name not in proxy_records()]  # each measured once per machine
        if args.proxies or (not args.no_proxies and unmeasured):
            from core.settings import load_settings

            _measure_proxies(load_settings(), args.quiet, None if args.proxies else unmeasured)
        machine = this_machine()
        print(f"This machine: {human_size(machine.memory_bytes)} of memory, {machine.cores} CPU cores, "
              f"translation on {machine.accelerator or 'the CPU'}; the bundled model translates "
              f"{tokens / max(seconds, 1e-9):.0f} tokens/s here.")
        _print_speeds(machine)
        _print_advice(advise(machine))
        return 0
    if action == "prepare":
        names = store.prepare_all_bundled(status_printer(args.quiet))
        if "voice-ge2e" in names:
            from core.speakers.model import converted_path

            converted_path(store)  # so an installer built from this store ships the numpy weights too
        if not args.quiet:
            print(f"Bundled models ready in {store.root}: {', '.join(names) or 'none installed'}")
        return 0
    if not args.name:
        raise SottoError(f"`sotto models {action}` needs a model name; `sotto models` lists them.")
    if action == "get":
        status = store.status(args.name) if not args.name.startswith("hf:") else None
        if status is not None and status.state == "bundled":
            store.resolve(args.name, status_printer(args.quiet))
        elif status is None or status.state != "ready":
            cancel = threading.Event()
            printer = status_printer(args.quiet)

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
        from core.models.download import sha256_file

        path = store.resolve(args.name)
        directory = store.location(args.name)  # the store's copy, or the one shipped with an installed Sotto
        manifest = json.loads((directory / "manifest.json").read_text())
        bad = [f for f, info in manifest["files"].items() if sha256_file(directory / f) != info["sha256"]]
        if bad:
            raise SottoError(
                f"The model '{args.name}' is damaged ({', '.join(bad)}); run `sotto models get {args.name}`."
            )
        print(f"{args.name} verified: {path}")
        return 0
    if action == "remove":
        store.remove(args.name)
        print(f"Removed {args.name} from {store.root}.")
        return 0
    raise SottoError(f"Unknown models action '{action}'.")


def devices(args: argparse.Namespace) -> int:
    from core.audio.loopback import list_output_devices, system_audio_unavailable
    from core.audio.sources import list_input_devices
    from core.errors import AudioDeviceError

    print("Inputs (microphones):")
    devices = list_input_devices()
    if not devices:
        print("  No audio input devices found.")
    for d in devices:
        mark = "*" if d.is_default else " "
        print(f"{mark} {d.index:3d}  {d.name}  ({d.channels} ch, {d.default_samplerate:.0f} Hz, {d.hostapi})")
    print("\nOutputs (system audio: what they play can be captioned):")
    unavailable = system_audio_unavailable()
    outputs: list = []
    if unavailable is None:
        try:
            outputs = list_output_devices()
        except AudioDeviceError as exc:
            unavailable = str(exc)
    if unavailable is not None:
        print(f"  {unavailable}")
    elif not outputs:
        print("  No audio outputs found.")
    for o in outputs:
        print(f"{'*' if o.is_default else ' '}      {o.name}  (system:{o.id})")
    print("\n* = default. Use `sotto caption mic:NAME` (or set audio.device) for an input, "
          "`sotto caption system` or `system:NAME` for what an output plays.")
    from core.compute import compute_devices

    print("\nCompute (asr.compute_device, asr.compute_dtype):")
    for line in compute_devices():
        print(f"  {line}")
    from core.asr.calibration import load_calibration, same_machine

    print("\nEngine (calibration):")
    cal = load_calibration()
    if cal is None:
        print("  not calibrated yet: run `sotto calibrate`")
    else:
        print(f"  {cal.choice or 'nothing chosen'} (measured {cal.date} on {cal.machine})")
        print(f"  {cal.reason}")
        if not same_machine(cal):
            print("  This was measured on another machine: run `sotto calibrate` again.")
        elif cal.settings:
            commands = _settings_to_apply(cal.settings)
            print(f"  Your settings differ; to use it: {commands}" if commands else "  Your settings use it.")
    return 0


def _settings_to_apply(values: dict) -> str:
    """The ``sotto settings set`` commands for those of ``values`` (key → value) that the saved
    settings do not have yet ("" when they all match)."""
    from core.settings import load_settings

    def text(value) -> str:
        value = getattr(value, "value", value)  # an enum: its value
        return str(value).lower() if isinstance(value, bool) else str(value)

    current = load_settings()
    return "; ".join(f"sotto settings set {k} {text(v)}" for k, v in values.items()
                     if text(current.value(k)) != text(v))


def calibrate(args: argparse.Namespace) -> int:
    """Time the speech configurations on this machine, choose one, save and print the result."""
    from dataclasses import asdict
    from pathlib import Path

    from core.asr.calibration import calibrate as measure
    from core.asr.calibration import proxy_dir, save_calibration, shape_of
    from core.models.store import ModelStore
    from core.session.engines import create_translator, streaming_options
    from core.settings import load_settings

    settings = load_settings()
    if args.target:
        settings = settings.with_value("translation.target", args.target)
    store = ModelStore()
    printer = status_printer(args.quiet)
    translator = create_translator(settings, store, printer)
    try:
        cal = measure(streaming_options(settings), translator, language=settings.asr.language,
                      target=settings.translation.target, store=store, device=args.device,
                      encoder_seconds=settings.asr.encoder_seconds, plays=1 if args.quick else 2,
                      repeats=3 if args.quick else 5, on_status=printer)
    finally:
        if translator is not None:
            translator.close()
    path = save_calibration(cal)
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(cal), indent=1) + "\n", encoding="utf-8")
    target = "no translation" if cal.target == "none" else f"translating into {cal.target}"
    print(f"Speech configurations on {cal.machine}: {cal.audio_s:g} s of the demo recording, {target}.")
    print("Busy: seconds the models work per second of speech; a configuration keeps up at "
          f"{cal.budget:g} or less.\n")
    width = max(len(r.name) for r in cal.results)
    print(f"{'CONFIGURATION'.ljust(width)}  {'BUSY':>5}  {'DRAFTER':>7}  {'VERIFIER':>8}  {'TRANSL.':>7}  "
          f"{'HOW':9}  {'KEEPS UP':8}  INSTALLED")
    for r in cal.results:
        verifier = f"{r.verifier_s:.2f}" if r.verifier else "–"
        print(f"{r.name.ljust(width)}  {r.busy:5.2f}  {r.drafter_s:7.2f}  {verifier:>8}  {r.translator_s:7.2f}  "
              f"{'measured' if r.measured else 'predicted':9}  {'yes' if r.keeps_up else 'no':8}  "
              f"{'yes' if r.installed else 'no'}")
        print(f"  {r.reason}")
    used = {shape.name for r in cal.results if r.verifier and (shape := shape_of(r.verifier)) is not None}
    others = [f"{name} {busy:.2f}" for name, busy in cal.predicted.items() if name not in used]
    if others:
        print(f"\nPredicted busy time with other verifiers (not in the catalogue): {', '.join(others)}.")
    print(f"\nChoice: {cal.reason}")
    if cal.settings:
        commands = _settings_to_apply(cal.settings)
        if commands and args.apply:
            from core.settings import save_settings

            current = load_settings()
            for key, value in cal.settings.items():
                current = current.with_value(key, value)
            save_settings(current)
            print("Your settings now use it.")
        else:
            print(f"To use it: {commands} (or run again with --apply)" if commands else "Your settings use it.")
    print(f"Saved to {path}.")
    proxies = proxy_dir()
    size = sum(f.stat().st_size for f in proxies.rglob("*") if f.is_file()) if proxies.is_dir() else 0
    if size:
        from core.models.store import human_size

        print(f"Random-weight models of the verifiers' shapes: {proxies} ({human_size(size)}; delete freely, "
              "they are rebuilt when needed).")
    return 0


def settings(args: argparse.Namespace) -> int:
    from core.settings import load_settings, save_settings, settings_path

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


def translate(args: argparse.Namespace) -> int:
    """``sotto translate FILE --target LANG``: a text file line by line or subtitles cue by cue, each
    translated as the app translates a finished sentence; written to ``--out`` (atomically) or stdout.
    Ctrl+C keeps what is done."""
    from pathlib import Path

    from core.models.store import ModelStore
    from core.paths import write_atomic
    from core.session.engines import create_translator
    from core.settings import load_settings
    from core.translate import StreamingTranslator
    from core.translate.document import read_document, translate_document

    settings = load_settings().with_value("translation.target", args.target)
    if settings.translation.target == "none":
        raise SottoError("`sotto translate` needs a language to translate into, e.g. --target de.")
    if args.translator:
        settings = settings.with_value("translation.model", args.translator)
    doc = read_document(args.file)
    out = Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise SottoError(f"The folder {out.parent} does not exist.")
    printer = status_printer(args.quiet)
    engine = create_translator(settings, ModelStore(), printer)
    assert engine is not None  # the target is a language
    what = "cues" if doc.subtitles else "lines"
    label = f"Translating {doc.path.name} into {settings.translation.target}"
    stop = threading.Event()

    def on_sigint(signum, frame) -> None:
        # The first Ctrl+C ends the work after the line under way (a clean place to stop: nothing half
        # translated, the model not interrupted mid-call); a second one stops at once.
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        stopped = not translate_document(doc, StreamingTranslator(engine), lambda n, total: printer(label, n / total),
                                         stop)
    except KeyboardInterrupt:
        stopped = True
    finally:
        signal.signal(signal.SIGINT, previous)
        engine.close()
    text = doc.render(done_only=stopped)
    try:
        if out is not None:
            write_atomic(out, text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except OSError as exc:
        raise SottoError(f"The translation could not be written to {out} ({exc.strerror or exc}).") from exc
    if stopped:
        done = sum(u.translation is not None for u in doc.to_translate)
        where = f" in {out}" if out is not None else ""
        sys.stderr.write(f"\nStopped: {done} of {len(doc.to_translate)} {what} translated, kept{where}.\n")
        return EXIT_INTERRUPTED
    return 0

"""Global hotkeys and the overlay under a real X server and window manager.

The module starts its own Xvfb (on a display number it picks itself: ``-displayfd``) with openbox on
it, runs the desktop app there as a child process (``QT_QPA_PLATFORM=xcb``, its own settings and
data), and a small Qt window of its own (``sotto-wm-target``) that takes the focus, lies under the
overlay and prints each click it gets. Keys are pressed with ``xdotool key`` (XTEST: as a keyboard
would), and what the X server has is read with xdotool, xwininfo and xprop. The app starts without
loading the models; only the overlay's picture in one test is of real captions made with them.

Two things openbox once got wrong are asserted, not excused: a click reaches the window below an
overlay with click-through on, and the overlay keeps its "above" state when click-through changes
(CaptionOverlay.set_click_through sets the flag on the shown native window; hiding and showing it
again, as QWidget.setWindowFlag did, let openbox's frame take the click and drop "above" now and then).

Without Xvfb, openbox or the X tools the X tests are skipped saying what is missing, and fail under
CI (``CI=true``), whose setup (packaging/setup.sh test) installs them. The pure logic of the
backends that cannot run here (Wayland portal, Windows, macOS) is checked at the end, offscreen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import ROOT, require_tool, wait_for

CONFLICT = "Ctrl+Alt+Shift+Space is already used by another program; choose another in Settings › Hotkeys."

# The desktop app as `sotto app` runs it, without preloading the models; it prints what the tests read
# (the bindings' problems, the control window's message, each hotkey handled) and takes commands on stdin.
APP = textwrap.dedent("""
    import faulthandler, json, os, signal, sys, threading
    faulthandler.register(signal.SIGUSR1)  # a test that waits in vain asks where each thread is
    from PySide6.QtCore import QObject, QSocketNotifier, Signal, Slot
    from PySide6.QtWidgets import QApplication, QWidget
    from app.controllers.app import AppController
    from app.main import _quit_on_signals

    app = QApplication(sys.argv[:1])
    app.setApplicationName("Sotto")
    app.setQuitOnLastWindowClosed(False)
    c = AppController(preload=False, welcome=os.environ.get("SOTTO_TEST_WELCOME") == "1")
    app.aboutToQuit.connect(c.shutdown)
    _quit_on_signals(app)

    # a stdout of its own: llama-cpp-python points fd 1 at /dev/null while it loads a model (the engine
    # check loads several), and a line printed then by another thread would be lost
    out = os.fdopen(os.dup(1), "w", buffering=1)

    def say(*words):
        print(*words, file=out, flush=True)

    say("PROBLEMS", json.dumps(c.hotkey_controller.problems))
    say("MESSAGE", c.window.message.text())
    c.hotkey_controller.triggered.connect(lambda action: say("HOTKEY", action))
    c.hotkey_controller.problems_changed.connect(lambda p: say("PROBLEMS", json.dumps(p)))
    c.settings_controller.hotkey_recording.connect(lambda on: say("RECORDING", on))
    c.settings_controller.applied.connect(lambda key, new: say("SET", key, new.value(key)))

    class Captions(QObject):  # real captions of the shared reading, made on a thread, shown on the GUI's
        made = Signal(object)

        @Slot(object)
        def show(self, view):
            c.overlay.show_view(view)
            say("CAPTIONS", len(view.lines))

    captions = Captions()
    captions.made.connect(captions.show)  # a QObject's slot: queued to the GUI thread that owns it

    def make_captions():
        from app.screenshot import caption_view
        captions.made.emit(caption_view())

    def run(line):
        key, _, value = line.strip().partition(" ")
        if key == "quit":
            app.quit()
        elif key == "shot":  # the whole screen as the X server has it (windows of every program, frames)
            app.primaryScreen().grabWindow(0).save(value)
            say("SHOT", value)
        elif key == "captions":
            threading.Thread(target=make_captions, daemon=True).start()
        elif key == "where":  # the middle of a widget, by its object name, in screen coordinates
            found = [w.findChild(QWidget, value) for w in app.topLevelWidgets() if w.isVisible()]
            widget = next(w for w in found if w is not None and w.isVisible())
            point = widget.mapToGlobal(widget.rect().center())
            say("AT", point.x(), point.y())
        elif key == "record":  # Settings › Hotkeys, the box of action `value` focused
            panel = c.show_settings()
            panel.tabs.setCurrentIndex(panel.tabs.count() - 1)
            panel.activateWindow()
            panel.hotkey_edits[value].setFocus()
        elif key:
            panel = c.show_settings()  # the answer shows in the panel
            ok = c.apply_setting(key, value)
            say("APPLIED", json.dumps([ok, panel.message.text(), c.settings.value(key)]))

    # commands are read on the GUI thread, as stdin has them (a socket notifier: no thread, no queue)
    pending = [b""]

    def readable():
        data = os.read(0, 4096)
        if not data:
            notifier.setEnabled(False)
            return
        pending[0] += data
        while b"\\n" in pending[0]:
            line, pending[0] = pending[0].split(b"\\n", 1)
            run(line.decode())

    notifier = QSocketNotifier(0, QSocketNotifier.Type.Read)
    notifier.activated.connect(readable)
    say("READY", int(c.overlay.winId()))
    sys.exit(app.exec())
""")

# A window of another program: takes the focus, lies under the overlay, prints each click.
TARGET = textwrap.dedent("""
    import sys
    from PySide6.QtWidgets import QApplication, QWidget

    class Target(QWidget):
        clicks = 0
        def mousePressEvent(self, event):
            Target.clicks += 1
            print("CLICK", Target.clicks, event.button().name, flush=True)

    app = QApplication(sys.argv[:1])
    w = Target()
    w.setWindowTitle("sotto-wm-target")
    w.setGeometry(40, 300, 1200, 480)
    w.show()
    print("READY", int(w.winId()), flush=True)
    sys.exit(app.exec())
""")

# Another client that grabs Ctrl+Alt+Shift+Space (Start's default) on the root window (with the lock variants)
# and keeps it.
GRABBER = textwrap.dedent("""
    import ctypes, ctypes.util, sys
    x = ctypes.CDLL(ctypes.util.find_library("X11"))
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XDefaultRootWindow.restype = ctypes.c_ulong
    x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x.XGrabKey.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_ulong,
                           ctypes.c_int, ctypes.c_int, ctypes.c_int]
    x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
    d = x.XOpenDisplay(None)
    code = x.XKeysymToKeycode(d, ord(" "))
    for lock in (0, 2, 16, 18):
        x.XGrabKey(d, code, 1 | 4 | 8 | lock, x.XDefaultRootWindow(d), 0, 1, 1)  # Shift, Control, Mod1 (Alt)
    x.XSync(d, 0)
    print("GRABBED", flush=True)
    sys.stdin.read()
""")


class Child:
    """A child process whose stdout lines are kept as they come (read on a thread)."""

    def __init__(self, args: list[str], env: dict[str, str], name: str, log_dir: Path) -> None:
        self.name = name
        self.lines: list[str] = []
        self.stderr = open(log_dir / f"{name}.stderr", "w+b")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, errors="replace", cwd=ROOT)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
        self.lines.append("EOF")

    def wait_line(self, prefix: str, timeout: float = 30.0, after: int = 0) -> str:
        """The first line from index ``after`` on that starts with ``prefix`` (waits for it)."""
        def found():
            return next((ln for ln in self.lines[after:] if ln.startswith(prefix)), None)

        try:
            wait_for(lambda: found() is not None or self.proc.poll() is not None, timeout,
                     f"{self.name}: {prefix} (its last lines: {self.lines[-4:]})")
        except AssertionError:
            if self.proc.poll() is None:  # where its threads are, into its stderr (faulthandler)
                self.proc.send_signal(signal.SIGUSR1)
            raise
        line = found()
        if line is None:
            self.stderr.seek(0)
            raise AssertionError(f"{self.name} exited ({self.proc.returncode}), its lines {self.lines[-6:]}: "
                                 f"{self.stderr.read().decode(errors='replace')[-3000:]}")
        return line

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()


def _x(env: dict[str, str], *args: str) -> str:
    return subprocess.run(args, env=env, capture_output=True, text=True, check=True, timeout=30).stdout


@pytest.fixture(scope="module")
def desktop(tmp_path_factory):
    """An X server with openbox running on it; yields the environment for its clients."""
    for tool, package in (("Xvfb", "xvfb"), ("openbox", "openbox"), ("xdotool", "xdotool"),
                          ("xwininfo", "x11-utils"), ("xprop", "x11-utils"), ("wmctrl", "wmctrl")):
        require_tool(tool, f"Debian package {package}; packaging/setup.sh test installs it")
    logs = tmp_path_factory.mktemp("x")
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=open(logs / "xvfb.log", "wb"))  # noqa: SIM115
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        number = pipe.readline().strip()  # Xvfb writes its display number once it accepts clients
    assert number.isdigit(), f"Xvfb did not start: {(logs / 'xvfb.log').read_text()[-2000:]}"
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(DISPLAY=f":{number}", QT_QPA_PLATFORM="xcb", XDG_SESSION_TYPE="x11")
    wm = subprocess.Popen(["openbox", "--sm-disable"], env=env, stdout=subprocess.DEVNULL,
                          stderr=open(logs / "openbox.log", "wb"))  # noqa: SIM115
    # openbox is ready once it answers as the EWMH window manager (nothing to wait on but the server)
    wait_for(lambda: subprocess.run(["wmctrl", "-m"], env=env, capture_output=True).returncode == 0, 30,
             "openbox to manage the display")
    env["SOTTO_LOG_DIR"] = str(logs / "sotto-logs")
    yield env, logs
    for proc in (wm, xvfb):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _start_app(desktop, tmp_path: Path, name: str = "app", welcome: bool = False) -> Child:
    env, logs = desktop
    env = dict(env, SOTTO_CONFIG_DIR=str(tmp_path / f"{name}-config"), SOTTO_DATA_DIR=str(tmp_path / f"{name}-data"),
               SOTTO_TEST_WELCOME="1" if welcome else "0")
    app = Child([sys.executable, "-c", APP], env, name, logs)
    app.wait_line("READY", timeout=60)
    return app


@pytest.fixture()
def target(desktop):
    env, logs = desktop
    child = Child([sys.executable, "-c", TARGET], env, "target", logs)
    child.wait_line("READY")
    yield child
    child.stop()


def _window(env, name: str) -> int:
    ids = _x(env, "xdotool", "search", "--name", f"^{re.escape(name)}$").split()
    assert len(ids) == 1, f"windows named {name!r}: {ids}"
    return int(ids[0])


def _mapped(env, wid: int) -> bool:
    """Whether ``wid`` is shown (False once it is gone, as a closed dialog's window is)."""
    try:
        return "IsViewable" in _x(env, "xwininfo", "-id", str(wid))
    except subprocess.CalledProcessError:
        return False


def _geometry(env, wid: int) -> tuple[int, int, int, int]:
    info = _x(env, "xwininfo", "-id", str(wid))
    value = {k: int(re.search(rf"{k}:\s+(-?\d+)", info).group(1))
             for k in ("Absolute upper-left X", "Absolute upper-left Y", "Width", "Height")}
    return tuple(value.values())


def _focus(env, wid: int) -> None:
    """Give ``wid`` the focus through the window manager, and check the X server says it has it."""
    _x(env, "xdotool", "windowactivate", "--sync", str(wid))
    wait_for(lambda: int(_x(env, "xdotool", "getwindowfocus").strip()) == wid, 10, "the focus on the window")


def _stacking(env) -> list[int]:
    """The managed windows, bottom to top (_NET_CLIENT_LIST_STACKING)."""
    text = _x(env, "xprop", "-root", "_NET_CLIENT_LIST_STACKING")
    return [int(h, 16) for h in re.findall(r"0x[0-9a-f]+", text)]


def _screenshot(app: Child, logs: Path, name: str) -> Path:
    """The whole screen as the X server has it, taken by the app (Qt's grab of the root window) into the
    test's logs, and into $SOTTO_SCREENSHOTS too where that is set (docs/SCREENSHOTS.md's series is made
    so): a picture for a human, not an assertion."""
    path = logs / f"{name}.png"
    seen = len(app.lines)
    app.send(f"shot {path}")
    app.wait_line("SHOT", after=seen, timeout=180)
    assert path.stat().st_size > 0
    if os.environ.get("SOTTO_SCREENSHOTS"):
        folder = Path(os.environ["SOTTO_SCREENSHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, folder / path.name)
    return path


def test_a_global_hotkey_toggles_the_overlay_while_another_window_has_focus(desktop, target, tmp_path):
    env, logs = desktop
    app = _start_app(desktop, tmp_path)
    try:
        assert app.wait_line("PROBLEMS") == "PROBLEMS {}"
        overlay = _window(env, "Sotto captions")
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay to be shown")
        other = _window(env, "sotto-wm-target")
        _focus(env, other)
        seen = len(app.lines)
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+o")
        assert app.wait_line("HOTKEY", after=seen) == "HOTKEY overlay"
        wait_for(lambda: not _mapped(env, overlay), 10, "the overlay to be hidden by Ctrl+Alt+Shift+O")
        assert int(_x(env, "xdotool", "getwindowfocus").strip()) == other  # the other program kept the focus
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+o")
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay to be shown again by Ctrl+Alt+Shift+O")
        assert int(_x(env, "xdotool", "getwindowfocus").strip()) == other

        # rebound in the settings, live: the old combination is released, the new one works
        app.send("hotkeys.overlay Ctrl+Alt+K")
        assert json.loads(app.wait_line("APPLIED")[len("APPLIED "):]) == [True, "Saved.", "Ctrl+Alt+K"]
        _focus(env, other)
        seen = len(app.lines)
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+k")
        assert app.wait_line("HOTKEY", after=seen) == "HOTKEY overlay"
        wait_for(lambda: not _mapped(env, overlay), 10, "the overlay to be hidden by the new binding")
        seen = len(app.lines)
        app.send("hotkeys.pause Ctrl+Bogus")
        ok, message, value = json.loads(app.wait_line("APPLIED", after=seen)[len("APPLIED "):])
        assert not ok and value == "Ctrl+Alt+Shift+P"
        assert message == ("hotkeys.pause must be a key combination such as Ctrl+Alt+Shift+P (modifiers and one "
                           "key, or an F-key alone), or empty for none (got 'Ctrl+Bogus').")
    finally:
        app.stop()
    assert app.proc.returncode == 0, app.lines


def _over_target(env) -> tuple[int, int, int, int, tuple[int, int], tuple[int, int]]:
    """The overlay's and the other window's ids, a point on the overlay over the other window, and a point
    on the other window beside the overlay."""
    overlay = _window(env, "Sotto captions")
    other = _window(env, "sotto-wm-target")
    wait_for(lambda: _mapped(env, overlay) and _mapped(env, other), 10, "both windows shown")
    ox, oy, ow, oh = _geometry(env, overlay)
    tx, ty, tw, th = _geometry(env, other)
    on = (ox + ow // 2, oy + oh // 2)
    assert tx <= on[0] < tx + tw and ty <= on[1] < ty + th, "the overlay lies over the other window"
    beside = (tx + tw - 10, ty + 10)
    assert not (ox <= beside[0] < ox + ow and oy <= beside[1] < oy + oh)
    return overlay, other, on, beside


def _click(env, point: tuple[int, int], button: int = 1) -> None:
    _x(env, "xdotool", "mousemove", "--sync", str(point[0]), str(point[1]), "click", str(button))


def test_the_overlay_stays_above_another_window_and_takes_its_clicks(desktop, target, tmp_path):
    env, logs = desktop
    app = _start_app(desktop, tmp_path)
    try:
        overlay, other, on, beside = _over_target(env)
        _focus(env, other)  # the other window is raised and active ...
        stack = _stacking(env)
        assert overlay in stack and other in stack, stack
        assert stack.index(overlay) > stack.index(other), "the overlay is above the focused window"  # ... still below
        seen = len(app.lines)
        app.send("captions")  # real captions of the shared reading, for the picture
        assert int(app.wait_line("CAPTIONS", timeout=180, after=seen).split()[1]) > 0
        _focus(env, other)
        _screenshot(app, logs, "wm-1-overlay-above-the-focused-window")
        # the overlay takes a click (the middle button: a left press starts moving it), then one beside it
        # reaches the other window: the first click that window gets
        _click(env, on, 2)
        _click(env, beside)
        assert target.wait_line("CLICK") == "CLICK 1 LeftButton"
        # click-through on by its global hotkey while the other window has focus: still shown, still above
        _focus(env, other)
        seen = len(app.lines)
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+x")
        assert app.wait_line("HOTKEY", after=seen) == "HOTKEY click_through"
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay shown again after its flags changed")
        _focus(env, other)
        # (QWidget.setWindowFlag used to hide and show the overlay, and openbox then dropped its "above" state
        # now and then; the flag now goes to the native window: CaptionOverlay.set_click_through)
        wait_for(lambda: _stacking(env).index(overlay) > _stacking(env).index(other), 5,
                 "the overlay above the focused window with click-through on")
        assert "_NET_WM_STATE_ABOVE" in _x(env, "xprop", "-id", str(overlay), "_NET_WM_STATE")
        _screenshot(app, logs, "wm-2-click-through-on")
    finally:
        app.stop()


def test_the_overlay_is_dragged_and_resized_with_the_mouse_and_comes_back_there(desktop, tmp_path):
    """A left-button drag on the overlay moves it (through the window manager: startSystemMove), a drag
    of its corner grip resizes it, and the next start puts it back there (the settings the app saved)."""
    env, logs = desktop
    app = _start_app(desktop, tmp_path)
    try:
        overlay = _window(env, "Sotto captions")
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay to be shown")
        x, y, w, h = _geometry(env, overlay)
        _x(env, "xdotool", "mousemove", "--sync", str(x + w // 3), str(y + h // 2), "mousedown", "1")
        for step in range(1, 11):  # a hand's drag: several motions, not one jump
            _x(env, "xdotool", "mousemove", "--sync", str(x + w // 3 - 12 * step), str(y + h // 2 - 9 * step))
        _x(env, "xdotool", "mouseup", "1")
        wait_for(lambda: _geometry(env, overlay)[:2] == (x - 120, y - 90), 10, "the overlay to follow the drag")
        x, y, w, h = _geometry(env, overlay)
        _x(env, "xdotool", "mousemove", "--sync", str(x + w - 8), str(y + h - 8), "mousedown", "1")
        for step in range(1, 11):
            _x(env, "xdotool", "mousemove", "--sync", str(x + w - 8 + 6 * step), str(y + h - 8 + 4 * step))
        _x(env, "xdotool", "mouseup", "1")
        wait_for(lambda: _geometry(env, overlay)[2:] == (w + 60, h + 40), 10, "the overlay to follow the grip")
        assert _geometry(env, overlay)[:2] == (x, y)  # resizing from the corner does not move it
        _screenshot(app, logs, "wm-3-overlay-dragged-and-resized")
        moved = _geometry(env, overlay)
    finally:
        app.stop()  # SIGTERM: the app quits and saves where the overlay is
    again = _start_app(desktop, tmp_path)
    try:
        overlay = _window(env, "Sotto captions")
        wait_for(lambda: _mapped(env, overlay) and _geometry(env, overlay) == moved, 10,
                 f"the overlay back at {moved} (it is at {_geometry(env, overlay)})")
    finally:
        again.stop()


def test_click_through_lets_a_click_reach_the_window_below(desktop, target, tmp_path):
    env, logs = desktop
    app = _start_app(desktop, tmp_path)
    try:
        overlay, other, on, beside = _over_target(env)
        _focus(env, other)
        seen = len(app.lines)
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+x")
        assert app.wait_line("HOTKEY", after=seen) == "HOTKEY click_through"
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay shown again after its flags changed")
        _focus(env, other)
        _click(env, on)  # a left click through the overlay, if it lets clicks through ...
        _click(env, beside, 3)  # ... then a right click beside it, which always arrives, after the first if that did
        target.wait_line("CLICK")
        wait_for(lambda: any(ln.endswith("RightButton") for ln in target.lines), 10, "the click beside the overlay")
        clicks = [ln for ln in target.lines if ln.startswith("CLICK")]
        # (with QWidget.setWindowFlag the overlay was made again and openbox's frame took this click; the flag
        # set on the shown native window lets it through)
        assert clicks == ["CLICK 1 LeftButton", "CLICK 2 RightButton"], clicks
    finally:
        app.stop()


def test_a_binding_another_program_holds_is_reported_and_the_others_work(desktop, target, tmp_path):
    env, logs = desktop
    grabber = Child([sys.executable, "-c", GRABBER], env, "grabber", logs)
    try:
        grabber.wait_line("GRABBED")
        app = _start_app(desktop, tmp_path)
        try:
            assert json.loads(app.wait_line("PROBLEMS")[len("PROBLEMS "):]) == {"start": CONFLICT}
            assert CONFLICT in app.wait_line("MESSAGE")  # the control window says it, in one sentence
            overlay = _window(env, "Sotto captions")
            wait_for(lambda: _mapped(env, overlay), 10, "the overlay to be shown")
            _screenshot(app, logs, "wm-5-a-hotkey-another-program-holds")
            _focus(env, _window(env, "sotto-wm-target"))
            seen = len(app.lines)
            _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+space")  # goes to the other program
            _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+o")
            assert app.wait_line("HOTKEY", after=seen) == "HOTKEY overlay"  # the first press Sotto saw
            wait_for(lambda: not _mapped(env, overlay), 10, "the overlay hidden by a binding that works")
        finally:
            app.stop()
    finally:
        grabber.stop()
    assert not any(line.startswith("HOTKEY start") for line in app.lines)



def test_settings_records_a_new_hotkey_which_works_at_once(desktop, target, tmp_path):
    env, logs = desktop
    app = _start_app(desktop, tmp_path)
    try:
        overlay = _window(env, "Sotto captions")
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay to be shown")
        app.send("record overlay")
        app.wait_line("RECORDING True")  # the box has the focus: the global hotkeys are released ...
        seen = len(app.lines)
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+shift+space")  # ... so this is recorded, not Start
        assert app.wait_line("SET", after=seen) == "SET hotkeys.overlay Ctrl+Alt+Shift+Space"
        _screenshot(app, logs, "wm-4-settings-records-a-hotkey")
        # recorded again, as Ctrl+Alt+J (Ctrl+Alt+Shift+Space is Start's)
        seen = len(app.lines)
        app.send("record overlay")
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+j")
        assert app.wait_line("SET", after=seen) == "SET hotkeys.overlay Ctrl+Alt+J"
        seen = len(app.lines)
        _focus(env, _window(env, "sotto-wm-target"))  # the box loses the focus: bound again, the new one too
        assert app.wait_line("PROBLEMS", after=seen) == "PROBLEMS {}"
        _x(env, "xdotool", "key", "--clearmodifiers", "ctrl+alt+j")
        assert app.wait_line("HOTKEY", after=seen) == "HOTKEY overlay"
        wait_for(lambda: not _mapped(env, overlay), 10, "the overlay hidden by the combination just recorded")
    finally:
        app.stop()
    assert not any(line.startswith("HOTKEY start") for line in app.lines)


def _settled(env, wid: int) -> None:
    """Wait until the window manager has placed ``wid`` (its geometry the same for half a second)."""
    last: list = [None]

    def same() -> bool:
        now = _geometry(env, wid)
        if now == last[0]:
            return True
        last[0] = now
        return False

    wait_for(same, 10, "the window to settle", poll=0.5)


def _click_widget(env, app: Child, name: str) -> None:
    """A left click, with the mouse through the X server, in the middle of the app's widget ``name``."""
    seen = len(app.lines)
    app.send(f"where {name}")
    _, x, y = app.wait_line("AT", after=seen).split()
    _click(env, (int(x), int(y)))


def test_the_first_run_welcome_is_answered_with_the_mouse_and_later_starts_skip_it(desktop, tmp_path):
    """A first start under the window manager: the welcome is a managed window with the focus; a click
    with the mouse answers what to caption and is saved at once; "Start captions" closes it and starts
    captions (stopping the engine check it began); the next start goes straight on, without a welcome."""
    env, logs = desktop
    app = _start_app(desktop, tmp_path, welcome=True)
    try:
        welcome = _window(env, "Welcome to Sotto")
        wait_for(lambda: _mapped(env, welcome), 10, "the welcome to be shown")
        wait_for(lambda: _x(env, "xdotool", "getactivewindow").strip() == str(welcome), 10,
                 "the welcome to have the focus")
        _settled(env, welcome)
        seen = len(app.lines)  # (the welcome suggests what the computer plays: chosen and saved as it opened)
        _click_widget(env, app, "source_both")
        assert app.wait_line("SET", after=seen) == "SET audio.source both"
        _screenshot(app, logs, "wm-6-first-run-welcome")
        _click_widget(env, app, "welcomeStart")
        wait_for(lambda: not _mapped(env, welcome), 10, "the welcome to close on Start captions")
        settings = tmp_path / "app-config" / "settings.toml"
        assert 'source = "both"' in settings.read_text(encoding="utf-8")
        _screenshot(app, logs, "wm-7-captions-after-the-welcome")
    finally:
        app.stop()
    again = _start_app(desktop, tmp_path, welcome=True)  # the same settings: not a first run
    try:
        overlay = _window(env, "Sotto captions")
        wait_for(lambda: _mapped(env, overlay), 10, "the overlay to be shown")
        found = subprocess.run(["xdotool", "search", "--name", "^Welcome to Sotto$"], env=env,
                               capture_output=True, text=True, timeout=30).stdout.split()
        assert not [w for w in found if _mapped(env, int(w))], "no welcome at a later start"
    finally:
        again.stop()


# -- what runs without X: parsing, the settings tab, and the backends written for other platforms ------------
def test_key_combinations_map_to_each_platforms_codes(qapp):
    from app.hotkeys import parse_chord
    from app.hotkeys.macos import CMD_KEY, CONTROL_KEY, SHIFT_KEY, key_code
    from app.hotkeys.macos import modifier_flags as mac_flags
    from app.hotkeys.portal import preferred_trigger, request_path
    from app.hotkeys.windows import MOD_CONTROL, MOD_NOREPEAT, MOD_SHIFT, MOD_WIN, virtual_key
    from app.hotkeys.windows import modifier_flags as win_flags
    from app.hotkeys.x11 import CONTROL, MOD4, SHIFT, keysym, lock_variants, modifier_mask

    s = parse_chord("ctrl+shift+s")
    assert s.text == "Ctrl+Shift+S" and s.modifiers == {"ctrl", "shift"}
    assert parse_chord("") is None
    for bad in ("Ctrl+Bogus", "Ctrl+A, Ctrl+B", "Shift"):
        with pytest.raises(ValueError):
            parse_chord(bad)
    assert (keysym(s), modifier_mask(s)) == (ord("s"), SHIFT | CONTROL)
    assert keysym(parse_chord("Meta+F5")) == 0xFFC2 and modifier_mask(parse_chord("Meta+F5")) == MOD4
    assert keysym(parse_chord("Ctrl+PgUp")) == 0xFF55
    assert lock_variants(16) == (0, 2, 16, 18)
    assert preferred_trigger(s) == "CTRL+SHIFT+s"
    assert preferred_trigger(parse_chord("Meta+Alt+Space")) == "ALT+LOGO+space"
    assert preferred_trigger(parse_chord("Ctrl+F12")) == "CTRL+F12"
    assert preferred_trigger(parse_chord("Ctrl+,")) == "CTRL+comma"
    assert request_path(":1.42", "sotto7_1") == "/org/freedesktop/portal/desktop/request/1_42/sotto7_1"
    from PySide6 import QtDBus

    from app.hotkeys import HotkeysUnavailable
    from app.hotkeys.portal import PortalHotkeys, shortcut_list

    # The PySide6 of requirements.lock (6.11) cannot marshal BindShortcuts' a(sa{sv}): the portal backend says
    # so in a sentence, before it opens a session, rather than crash or bind nothing silently. A PySide6 that
    # can fails this: then the backend's BindShortcuts call is to be tried on a Wayland desktop.
    unable = "PySide6's QtDBus cannot build the portal's list of shortcuts, a(sa{sv})"
    with pytest.raises(HotkeysUnavailable) as refused:
        shortcut_list(QtDBus, {"start": s})
    assert str(refused.value) == unable
    with pytest.raises(HotkeysUnavailable) as refused:
        PortalHotkeys()
    assert str(refused.value) == unable
    assert (virtual_key(s), win_flags(s)) == (ord("S"), MOD_NOREPEAT | MOD_CONTROL | MOD_SHIFT)
    assert virtual_key(parse_chord("Meta+F1")) == 0x70 and win_flags(parse_chord("Meta+F1")) & MOD_WIN
    assert virtual_key(parse_chord("Ctrl+F30")) is None  # Windows stops at F24
    assert (key_code(s), mac_flags(s)) == (0x01, CMD_KEY | SHIFT_KEY)  # Qt's Ctrl is ⌘ on macOS
    assert key_code(parse_chord("Meta+O")) == 0x1F and mac_flags(parse_chord("Meta+O")) == CONTROL_KEY
    assert key_code(parse_chord("Ctrl+F1")) == 0x7A and key_code(parse_chord("Ctrl+Left")) == 0x7B


def test_the_well_known_shortcuts_are_written_as_qt_writes_them(qapp):
    """A refusal names the combination as Settings › Hotkeys shows it: each entry of core.hotkeys' list is Qt's
    own portable text, and core writes a family's member (Shift+K) in Qt's order too."""
    from app.hotkeys import parse_chord
    from core.hotkeys import WELL_KNOWN, combination, written

    assert [text for text in WELL_KNOWN if parse_chord(text).text != text] == []
    chord = parse_chord("Shift+Meta+Alt+Ctrl+K")
    assert written(*combination(chord.text)) == chord.text


@pytest.mark.qt
def test_without_a_backend_the_app_says_so_once_and_the_hotkeys_tab_applies_live(qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QPushButton

    from app.controllers.app import AppController
    from app.controllers.hotkeys import HotkeyController
    from app.hotkeys import Chord, HotkeyBackend

    class Refusing(HotkeyBackend):  # a stand-in for a platform's backend that refuses one binding
        name = "test"

        def bind(self, chords: dict[str, Chord]) -> dict[str, str]:
            self.bound = chords
            return {a: f"{c.text} is already used by another program; choose another in Settings › Hotkeys."
                    for a, c in chords.items() if a == "pause"}

    monkeypatch.setenv("SOTTO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path / "data"))
    controller = AppController(show_windows=False, preload=False)  # offscreen: no global hotkeys
    try:
        assert not controller.hotkey_controller.available
        assert ("Global hotkeys are not available here (the offscreen display offers none); the shortcuts work "
                "while a Sotto window has focus.") in controller.window.message.text()
        panel = controller.show_settings()
        edit = panel.hotkey_edits["overlay"]
        assert edit.keySequence().toString() == "Ctrl+Alt+Shift+O"
        with qtbot.waitSignal(panel.change_requested) as changed:
            panel.findChild(QPushButton, "hotkeyClear_overlay").click()
        assert changed.args == ["hotkeys.overlay", ""]
        assert controller.settings.hotkeys.overlay == ""
        assert not controller.apply_setting("hotkeys.start", "Ctrl+Bogus")
        assert "hotkeys.start must be a key combination" in panel.message.text()
        assert panel.hotkey_edits["start"].keySequence().toString() == "Ctrl+Alt+Shift+Space"  # snapped back
        # a combination a well-known program uses: refused in one sentence, the box snaps back
        assert not controller.apply_setting("hotkeys.start", "Ctrl+Shift+T")
        assert panel.message.text() == "Ctrl+Shift+T reopens a closed tab in web browsers; choose another combination."
        assert panel.hotkey_edits["start"].keySequence().toString() == "Ctrl+Alt+Shift+Space"
        assert controller.settings.hotkeys.start == "Ctrl+Alt+Shift+Space"

        # with a backend, a binding it refuses shows under its row, and a press arrives queued
        backend = Refusing()
        hk = HotkeyController(controller.settings_controller, backend)
        hk.problems_changed.connect(controller.settings_controller.show_hotkey_problems)
        shown = []
        hk.triggered.connect(shown.append)
        hk.start()
        assert set(backend.bound) == {"start", "pause", "click_through"}  # overlay was cleared: off
        assert panel.hotkey_problem("pause") == (
            "Ctrl+Alt+Shift+P is already used by another program; choose another in Settings › Hotkeys.")
        assert panel.hotkey_problem("start") == ""
        assert controller.apply_setting("hotkeys.pause", "Ctrl+Alt+P")  # rebinding applies live
        assert backend.bound["pause"].text == "Ctrl+Alt+P"
        # while a hotkey box has the focus nothing is bound, so the keys pressed go to the box
        controller.settings_controller.hotkey_recording.connect(hk.suspend)
        panel.tabs.setCurrentIndex(panel.tabs.indexOf(panel.hotkey_edits["start"].parentWidget()))
        qtbot.waitExposed(panel)
        panel.hotkey_edits["start"].setFocus()
        qtbot.waitUntil(lambda: backend.bound == {})
        panel.tabs.setFocus()
        qtbot.waitUntil(lambda: set(backend.bound) == {"start", "pause", "click_through"})
        backend.activated.emit("start")
        qtbot.waitUntil(lambda: shown == ["start"])  # queued to the UI thread
        hk.close()
    finally:
        controller.shutdown()

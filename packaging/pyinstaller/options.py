"""What goes into a PyInstaller build of Sotto, as plain data (read by packaging/sotto.spec).

Kept apart from the spec so the choices can be read and tested without PyInstaller: which
modules are left out, which macOS Info.plist keys are set, what the build environment asks for.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

APP_NAME = "Sotto"
BUNDLE_ID = "io.github.sotto.Sotto"
MIN_MACOS = "12.0"

# Only the opt-in speculative speech engine uses PyTorch and transformers (~700 MB with their
# dependencies); the default build leaves them out (see packaging/pyinstaller/entry.py).
TORCH_MODULES = ("torch", "torchaudio", "torchvision", "transformers", "sympy", "networkx", "triton")
# Never used by the installed app: benchmarks, tests and their tools, other GUI toolkits.
DEV_MODULES = ("bench", "tests", "pytest", "_pytest", "pytestqt", "piper", "piper_tts", "gguf", "sacrebleu",
               "tkinter", "_tkinter", "IPython", "matplotlib", "pandas", "scipy", "PyInstaller")


@dataclass(frozen=True)
class BuildOptions:
    """One build's choices, from the environment that packaging/build.sh (or build.ps1) sets."""

    models: Path | None = None  # prepared, verified models to ship read-only (SOTTO_BUNDLE_MODELS)
    with_torch: bool = False  # ship PyTorch for the speculative engine (SOTTO_BUNDLE_TORCH=1)
    audiotap: Path | None = None  # the macOS system audio helper (SOTTO_AUDIOTAP_BIN)
    version: str = "0.0.0"
    excludes: tuple[str, ...] = field(default=())

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, version: str = "0.0.0") -> BuildOptions:
        env = dict(os.environ if env is None else env)
        with_torch = env.get("SOTTO_BUNDLE_TORCH", "") == "1"
        models = env.get("SOTTO_BUNDLE_MODELS") or None
        audiotap = env.get("SOTTO_AUDIOTAP_BIN") or None
        excludes = DEV_MODULES + (() if with_torch else TORCH_MODULES)
        return cls(Path(models) if models else None, with_torch, Path(audiotap) if audiotap else None,
                   version, excludes)


def plist_fragment(path: Path) -> dict[str, str]:
    """The ``<key>``/``<string>`` pairs of an Info.plist fragment (comments ignored)."""
    text = re.sub(r"<!--.*?-->", "", path.read_text(encoding="utf-8"), flags=re.S)
    return dict(re.findall(r"<key>\s*([^<]+?)\s*</key>\s*<string>(.*?)</string>", text, flags=re.S))


def info_plist(fragment: Path, version: str) -> dict[str, object]:
    """Sotto.app's Info.plist entries: the privacy prompts of ``fragment`` and the app's facts."""
    keys: dict[str, object] = {
        "CFBundleName": APP_NAME,
        "CFBundleDisplayName": APP_NAME,
        "CFBundleShortVersionString": version,
        "CFBundleVersion": version,
        "LSMinimumSystemVersion": MIN_MACOS,
        "NSHighResolutionCapable": True,
    }
    keys.update(plist_fragment(fragment))
    for needed in ("NSMicrophoneUsageDescription", "NSAudioCaptureUsageDescription"):
        if needed not in keys:
            raise ValueError(f"{fragment} has no {needed}; macOS would never ask for that permission.")
    return keys

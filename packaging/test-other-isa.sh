#!/usr/bin/env bash
# Runs tests as on the other x86-64 CPU family (AVX2 only) on a machine with AVX-512, so results that
# move with the CPU's vector kernels show up here, not first on someone else's machine.
#   CTranslate2 (faster-whisper):  CT2_FORCE_CPU_ISA=AVX2, and its int8 GEMM backend oneDNN: ONEDNN_MAX_CPU_ISA
#   PyTorch (speculative engine):  ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2 (bfloat16/int8 matmuls)
#   MKL, where a library uses it:  MKL_ENABLE_INSTRUCTIONS=AVX2
#   llama.cpp (translation):       a second build of llama-cpp-python without AVX-512 (GGML_NATIVE off,
#                                  AVX2/FMA/F16C/BMI2 on), kept beside the main one by a hash of its pin
#                                  and flags and put first on PYTHONPATH
# On a machine without AVX-512 there is no other family to force (AVX-512 cannot be emulated): it says
# so and runs the tests as they are. Usage: packaging/test-other-isa.sh [pytest arguments]
# (default: the tests whose results depend on the kernels; see ISA_TESTS below).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
say() { printf '\033[1msotto other-isa:\033[0m %s\n' "$*" >&2; }
"$ROOT/packaging/setup.sh" test

ISA_TESTS=(
  tests/test_dtype.py                 # bfloat16 tree pass against plain passes (oneDNN's bf16 kernels)
  tests/test_streaming_asr.py         # tiny.en int8 on synthesized speech (CTranslate2's int8 kernels)
  tests/test_translation_quality.py   # frozen translations of real recordings (llama.cpp's kernels)
  tests/test_copies.py                # what the model alone makes of short lines, and what is shown (llama.cpp's kernels)
  tests/test_ssbd.py                  # beta 0 equals greedy on this build's kernels
  tests/test_verified.py              # which words base hears in each line (CTranslate2's int8 kernels)
  tests/test_cross_check.py           # which model's decode of a line both models find likelier (int8 kernels)
  tests/test_meeting.py               # tiny.en int8 on speech through the speakers (without VNNI: "Thank you.")
  tests/test_calibration.py           # proxies timed against the real models, the engine chosen on these kernels
)
[ $# -gt 0 ] && ISA_TESTS=("$@")

if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  say "this CPU has no AVX-512: it is already the AVX2 family; running the tests as they are"
  exec env SOTTO_MODELS_DIR="${SOTTO_MODELS_DIR:-$ROOT/.cache/models}" QT_QPA_PLATFORM=offscreen \
    .venv/bin/python -m pytest -ra "${ISA_TESTS[@]}"
fi

# --- llama.cpp without AVX-512, once per machine --------------------------------------------------
llama_pin=$(grep -i '^llama[-_]cpp[-_]python==' requirements.lock)
llama_args="-DGGML_LLAMAFILE=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF"
py_tag=$(.venv/bin/python -c 'import platform, sys; print(sys.version_info[:2], platform.machine())')
wheel_key=$(printf '%s %s %s' "$llama_pin" "$llama_args" "$py_tag" | sha256sum | cut -c1-12)
wheel_dir=${SOTTO_WHEEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-$ROOT}/.cache}/sotto/wheels}/$wheel_key
mkdir -p "$wheel_dir" 2>/dev/null || wheel_dir=.cache/wheels/$wheel_key
target=.cache/isa-avx2/$wheel_key
if [ ! -f "$target/.done" ]; then
  if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    say "building llama-cpp-python without AVX-512 (several minutes, once per machine)"
    mkdir -p "$wheel_dir"
    CMAKE_ARGS="$llama_args" .venv/bin/python -m pip wheel --no-deps --no-binary llama-cpp-python --no-cache-dir \
      --disable-pip-version-check -q "$llama_pin" -w "$wheel_dir"
  fi
  rm -rf "$target"
  .venv/bin/python -m pip install --no-deps --disable-pip-version-check -q --target "$target" \
    "$wheel_dir"/llama_cpp_python-*.whl
  touch "$target/.done"
fi

export CT2_FORCE_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2
export PYTHONPATH="$ROOT/$target${PYTHONPATH:+:$PYTHONPATH}"
export SOTTO_MODELS_DIR=${SOTTO_MODELS_DIR:-$ROOT/.cache/models} QT_QPA_PLATFORM=offscreen
export SOTTO_FORCED_ISA=AVX2  # read by tests/conftest.py, which checks that every library took it
say "running ${ISA_TESTS[*]} with AVX2 kernels (CTranslate2, PyTorch/oneDNN, llama.cpp)"
exec .venv/bin/python -m pytest -ra "${ISA_TESTS[@]}"

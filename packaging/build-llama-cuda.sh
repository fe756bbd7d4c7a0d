#!/usr/bin/env bash
# llama-cpp-python built for an NVIDIA GPU on a machine without one (issue #51's GPU machine): NVIDIA's
# compiler, runtime and cuBLAS headers come from PyPI (nvidia-cuda-nvcc & co., CUDA 13.0), the kernels are
# compiled for one GPU architecture only (default 90: H100/H200), and the package is written as a folder
# small enough to carry there (`run` carries at most 64 MiB). The CUDA runtime and cuBLAS are not in it:
# on the GPU machine they are loaded from PyTorch's CUDA 13 wheels (bench/gpu_all.py preloads them), and a
# CUDA 13 driver runs code built with 13.0.
# The build is kept under .cache/llama-cuda/<hash of the pin, the flags, the toolkit and this script>, so it
# happens once (about half an hour on 2 cores); the folder's path is printed last.
# Usage: packaging/build-llama-cuda.sh [ARCH]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ARCH=${1:-90}
say() { printf '\033[1mbuild-llama-cuda:\033[0m %s\n' "$*" >&2; }

TOOLKIT=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96
         nvidia-cublas==13.0.2.14 nvidia-cuda-cccl==13.0.85)
llama_pin=$(grep -i '^llama[-_]cpp[-_]python==' requirements.lock)
flags="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${ARCH}-real -DGGML_CUDA_NO_VMM=ON -DGGML_CUDA_NCCL=OFF
-DGGML_CUDA_FA=OFF -DGGML_LLAMAFILE=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
key=$(printf '%s\n' "$llama_pin" "$flags" "${TOOLKIT[*]}" | cat - "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)
out=.cache/llama-cuda/$key
if [ -f "$out/llama_cpp/__init__.py" ]; then
  say "already built: $out"; echo "$out"; exit 0
fi

# the toolkit, in a virtual environment of its own (about 0.9 GB; kept for the next build)
tk=.cache/cuda-toolkit/$(printf '%s' "${TOOLKIT[*]}" | sha256sum | cut -c1-12)
if [ ! -x "$tk/venv/bin/python" ]; then
  say "installing NVIDIA's CUDA 13.0 compiler, runtime and cuBLAS headers from PyPI"
  rm -rf "$tk"; mkdir -p "$tk"
  python3 -m venv "$tk/venv"
  "$tk/venv/bin/python" -m pip install -q --disable-pip-version-check "${TOOLKIT[@]}" wheel
fi
cuda=$("$tk/venv/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')
# nvcc links from lib64 and CMake's FindCUDAToolkit looks for the unversioned names, as in a system install
[ -e "$cuda/lib64" ] || ln -s lib "$cuda/lib64"
for lib in cudart cublas cublasLt; do
  [ -e "$cuda/lib/lib$lib.so" ] || ln -s "lib$lib.so.13" "$cuda/lib/lib$lib.so"
done

say "building $llama_pin for sm_$ARCH (CUDA $("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PATH="$cuda/bin:$PATH" CUDACXX="$cuda/bin/nvcc" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
  CMAKE_ARGS="$(echo $flags) -DCUDAToolkit_ROOT=$cuda -DCMAKE_CUDA_COMPILER=$cuda/bin/nvcc" \
  "$tk/venv/bin/python" -m pip wheel --no-deps --no-binary llama-cpp-python --no-cache-dir \
    --disable-pip-version-check "$llama_pin" -w "$work" > "$work/build.log" 2>&1 || {
      tail -n 40 "$work/build.log" >&2; say "the build failed (log above)"; exit 1; }
mkdir -p "$out.partial"
"$tk/venv/bin/python" -m zipfile -e "$work"/llama_cpp_python-*.whl "$out.partial"
# Only the package travels, and in its lib/ only the names llama_cpp opens and the sonames the libraries ask
# for (a wheel stores each library three times: name, soname, full version).
keep="libllama.so libllama.so.0 libmtmd.so libggml.so libggml.so.0 libggml-base.so.0 libggml-cpu.so.0 libggml-cuda.so.0"
find "$out.partial" -mindepth 1 -maxdepth 1 ! -name llama_cpp -exec rm -rf {} +
for f in "$out.partial"/llama_cpp/lib/*; do
  case " $keep " in *" $(basename "$f") "*) ;; *) rm -f "$f" ;; esac
done
find "$out.partial" -name '*.so*' -type f -exec strip --strip-unneeded {} +
rm -rf "$out"; mv "$out.partial" "$out"
say "done: $(du -sh "$out" | cut -f1) in $out"
echo "$out"

#!/usr/bin/env bash
# Sets up everything Sotto needs on this machine, and is quick the second time:
#   system packages (PortAudio, Qt's X11/EGL libraries; PulseAudio for the tests),
#   .venv/ with the pinned dependencies of requirements.lock, the `sotto` command,
#   and the bundled models prepared in the model store.
# Usage: packaging/setup.sh [app|test]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MODE=${1:-app}
say() { printf '\033[1msotto setup:\033[0m %s\n' "$*" >&2; }

# --- 1. system packages (Debian/Ubuntu) ---------------------------------------------
pkgs=(libportaudio2 libasound2-plugins libpulse0 libegl1 libgl1 libopengl0 libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0
      libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-render-util0
      libxcb-image0 libxcb-xkb1 libfontconfig1 libdbus-1-3 libglib2.0-0 fonts-dejavu-core)
command -v cc >/dev/null && command -v cmake >/dev/null || pkgs+=(build-essential cmake)
[ "$MODE" = test ] && pkgs+=(pulseaudio pulseaudio-utils strace xvfb openbox xdotool x11-utils wmctrl)
if command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if [ -n "$sudo" ] && ! command -v sudo >/dev/null; then
      say "please install these system packages as root: ${missing[*]}"; exit 1
    fi
    say "installing system packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  say "not a Debian-based system: make sure PortAudio and Qt's platform libraries are installed"
fi

# --- 2. Python ------------------------------------------------------------------------
PY=""
for cand in python3.11 python3.12 python3.13 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    PY=$cand; break
  fi
done
[ -n "$PY" ] || { say "Python 3.11 or newer is needed (apt-get install python3)"; exit 1; }

# --- 3. virtual environment with pinned dependencies -----------------------------------
want=$(cat requirements.lock pyproject.toml packaging/setup.sh | sha256sum | cut -c1-16)
stamp=.venv/.sotto-setup
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if [ ! -x .venv/bin/python ]; then
    say "creating .venv with $PY"
    if ! "$PY" -m venv .venv 2>/dev/null; then
      say "installing python3-venv"; rm -rf .venv
      ${sudo:-} apt-get install -y -qq python3-venv >/dev/null; "$PY" -m venv .venv
    fi
  fi
  say "installing pinned dependencies"
  pip_log=.venv/pip-install.log
  pip() { .venv/bin/python -m pip "$@" --disable-pip-version-check >>"$pip_log" 2>&1 || {
            tail -n 30 "$pip_log" >&2; say "pip failed; the full log is in $pip_log"; exit 1; }; }
  : > "$pip_log"
  pip install --upgrade pip wheel
  # llama-cpp-python is built from source once, with llama.cpp's llamafile kernels off: their
  # tile shapes depend on the batch size, which would make speculative verification differ
  # from plain decoding (see core/translate/llama_runner.py). Extra CMAKE_ARGS (e.g. CUDA,
  # Metal) are passed on. The wheel is kept under the user's cache directory, named by a hash of
  # the pin, the build flags, the Python version and the machine, so this happens once per
  # machine, fresh clones included (SOTTO_WHEEL_CACHE moves it).
  llama_pin=$(grep -i '^llama[-_]cpp[-_]python==' requirements.lock)
  llama_args="-DGGML_LLAMAFILE=OFF ${CMAKE_ARGS:-}"
  py_tag=$(.venv/bin/python -c 'import platform, sys; print(sys.version_info[:2], platform.machine())')
  wheel_key=$(printf '%s %s %s' "$llama_pin" "$llama_args" "$py_tag" | sha256sum | cut -c1-12)
  wheel_dir=${SOTTO_WHEEL_CACHE:-${XDG_CACHE_HOME:-${HOME:-$ROOT}/.cache}/sotto/wheels}/$wheel_key
  if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1 && ! mkdir -p "$wheel_dir" 2>/dev/null; then
    wheel_dir=.cache/wheels/$wheel_key  # no writable user cache: keep it in the project
  fi
  if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    say "building llama-cpp-python with $llama_args (several minutes, once)"
    CMAKE_ARGS="$llama_args" pip wheel --no-deps --no-binary llama-cpp-python --no-cache-dir "$llama_pin" -w "$wheel_dir"
  fi
  pip install --force-reinstall --no-deps "$wheel_dir"/llama_cpp_python-*.whl
  pip install -r requirements.lock
  # The GE2E voice encoder's weights (speaker labels) ship inside Resemblyzer's wheel; Sotto reads
  # only that file (converted to numpy), so none of its dependencies (librosa, webrtcvad) are needed.
  pip install --no-deps Resemblyzer==0.1.4
  pip install --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi

# --- 3b. CUDA 12's cuBLAS, where an NVIDIA GPU is here --------------------------------------
# CTranslate2 (the speech models) computes on a GPU only with CUDA 12's cuBLAS, which a driver alone
# or a CUDA 13 install does not have. NVIDIA's wheel (about 400 MB to download, once) goes into
# .venv, where Sotto loads it (core.compute.preload_cuda_libraries). Only where nvidia-smi lists a
# GPU and neither the system nor .venv has it; SOTTO_CUDA=0 skips this.
if [ "${SOTTO_CUDA:-auto}" != 0 ] && command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU' \
   && ! .venv/bin/python -c 'import ctypes; ctypes.CDLL("libcublas.so.12")' 2>/dev/null \
   && ! .venv/bin/python -c 'import nvidia.cublas' 2>/dev/null; then
  say "an NVIDIA GPU is here: installing CUDA 12's cuBLAS for the speech models (about 400 MB, once)"
  .venv/bin/python -m pip install --disable-pip-version-check -q "nvidia-cublas-cu12>=12.4,<13" \
    || say "could not install nvidia-cublas-cu12: the speech models stay on the CPU (sotto devices says why)"
fi

# --- 4. bundled models -------------------------------------------------------------------
if [ "$MODE" = test ]; then
  # Tests never use the user's directories: a project-local model store.
  export SOTTO_MODELS_DIR=${SOTTO_MODELS_DIR:-$ROOT/.cache/models}
fi
.venv/bin/sotto models prepare --quiet

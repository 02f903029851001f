#!/usr/bin/env bash
# Makes a fresh clone ready, and does nothing that is already done: the npm packages, the
# binary (rebuilt when a source is newer), the Python venv with the SDK, its test tools (the
# `mcp` package among them: the MCP tests' Python server) and Ray, and
# the real model of the end-to-end test (scripts/setup-real-model.sh: llama-cpp-python's server
# and Gemma 3 270M; its first run on a machine compiles for ~10 minutes). SETUP_REAL_MODEL=0
# skips that last step (the demo and the benchmarks do not need it).
set -euo pipefail
cd "$(dirname "$0")/.."

# A node_modules that is a symbolic link is another tree's install (a git worktree sharing the
# main checkout's): `npm ci` would empty the folder it points to, under every tree that uses it.
if [ -L node_modules ]; then
  [ -d node_modules/ ] || { echo "setup: node_modules links to $(readlink node_modules), which is missing" >&2; exit 1; }
elif [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

if [ ! -x bin/harness-bridge ] || [ -n "$(find src scripts/build.mjs scripts/sandbox-helper.mjs package.json -newer bin/harness-bridge -type f -print -quit)" ]; then
  echo "setup: building bin/harness-bridge" >&2
  npm run --silent build >&2
fi

if [ "${SETUP_PYTHON:-1}" = "1" ]; then
  if [ ! -x .venv/bin/python ]; then
    echo "setup: python venv" >&2
    python3 -m venv .venv
  fi
  # mcp: the MCP tests' Python server (test/fixtures/mcp_probe_server.py); [ray]: the Ray batch
  # tests run on a real local Ray cluster; [otel]: opentelemetry-api, for the
  # traceparent tests (tests/test_tracing.py). A venv made before they joined gets them here.
  if ! .venv/bin/python -c 'import deepseek_harness, pytest, mcp, ray, opentelemetry.trace' 2>/dev/null; then
    echo "setup: pip install python/sdk[test,ray,otel]" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e 'python/sdk[test,ray,otel]' >&2
  fi
  # The examples test (python/sdk/tests/test_examples.py) type-checks every documented block.
  if ! .venv/bin/python -c 'import mypy' 2>/dev/null; then
    echo "setup: pip install mypy" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check 'mypy>=1.10' >&2
  fi
fi

if [ "${SETUP_PYTHON:-1}" = "1" ] && [ "${SETUP_REAL_MODEL:-1}" = "1" ]; then
  bash scripts/setup-real-model.sh
fi

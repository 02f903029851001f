#!/usr/bin/env bash
# Every test: types, API docs, the TypeScript suites (incl. end-to-end through the binary and
# the snapshots), the Python SDK suite, and the keyless Python smoke.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== typecheck"
npm run --silent typecheck
echo "== API docs (typedoc, warnings are errors)"
npx typedoc --logLevel Warn
echo "== TypeScript tests"
npx vitest run
echo "== Python SDK tests"
.venv/bin/python -m pytest python/sdk/tests -q
if [ -f scripts/smoke-python-runtime.py ]; then
  echo "== Python runtime smoke"
  .venv/bin/python scripts/smoke-python-runtime.py
fi

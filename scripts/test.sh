#!/usr/bin/env bash
# Every test: types, API docs, the TypeScript suites (incl. end-to-end through the binary and
# the snapshots), the Python SDK suite, and the keyless Python smoke.
#
# The suites run with HOME set to an empty temporary folder (the caches stay where they were),
# and the run fails if anything wrote state there: a bridge started without a session root of
# its own would have put its logs into the user's ~/.local/state/harness-bridge. The suites give
# every bridge a temporary root themselves (test/support/isolate-state.ts, the autouse fixture
# in python/sdk/tests/conftest.py); this is the check that none slipped past them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

real_home=$HOME
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$real_home/.cache}"
export npm_config_cache="${npm_config_cache:-$real_home/.npm}"
export npm_config_update_notifier=false
test_home=$(mktemp -d "${TMPDIR:-/tmp}/hb-test-home-XXXXXX")
export HOME=$test_home
unset XDG_STATE_HOME HARNESS_SESSION_ROOT
check_home() {
  local status=$?
  if [ -e "$test_home/.local/state" ]; then
    echo "== FAIL: the tests wrote state under HOME (a bridge without a temporary session root?):" >&2
    (cd "$test_home" && find .local/state | head -20) >&2
    status=1
  fi
  rm -rf "$test_home"
  exit "$status"
}
trap check_home EXIT
# vitest colours its output whenever TERM is not "dumb", tty or not (tinyrainbow checks no tty):
# escape codes in a piped log (CI, `| tee`) are noise.
[ -t 1 ] || export NO_COLOR=1

echo "== typecheck"
npm run --silent typecheck
echo "== API docs (typedoc, warnings are errors)"
npx typedoc --logLevel Warn
echo "== TypeScript tests"
scripts/vitest run
echo "== Python SDK tests"
.venv/bin/python -m pytest python/sdk/tests -q
if [ -f scripts/smoke-python-runtime.py ]; then
  echo "== Python runtime smoke"
  .venv/bin/python scripts/smoke-python-runtime.py
fi

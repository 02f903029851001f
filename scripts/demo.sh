#!/usr/bin/env bash
# The demo: turns of the offline demo model, streamed through bin/harness-bridge by the Python SDK,
# paced so that the text is seen to arrive (`bash scripts/demo.sh --fast`: unpaced).
set -euo pipefail
cd "$(dirname "$0")/.."
# stdout is the demo's own: what setup runs (npm ci, the build, pip) reports on stderr.
SETUP_REAL_MODEL=0 bash scripts/setup.sh >&2
HARNESS_BRIDGE_BIN="${HARNESS_BRIDGE_BIN:-$PWD/bin/harness-bridge}" exec .venv/bin/python scripts/demo.py "$@"

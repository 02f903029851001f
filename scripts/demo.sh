#!/usr/bin/env bash
# The demo: one turn of the offline demo model, streamed through bin/harness-bridge by the Python SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_REAL_MODEL=0 bash scripts/setup.sh
HARNESS_BRIDGE_BIN="${HARNESS_BRIDGE_BIN:-$PWD/bin/harness-bridge}" exec .venv/bin/python scripts/demo.py

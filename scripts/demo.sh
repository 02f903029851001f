#!/usr/bin/env bash
# The demo: one turn of the offline demo model, streamed through bin/harness-bridge.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node scripts/demo.mjs

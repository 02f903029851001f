#!/usr/bin/env bash
# The benchmarks: builds what is missing, prepares the bench-only venv, prints the table and
# writes bench/results.md. Arguments go to bench/run.py (--quick, --only SECTIONS, --out FILE).
#
# bench/.venv holds the SDK (editable) and the `mcp` Python client, the MCP peer of the
# round-trip benchmark; it is kept apart from the test venv (.venv, which has `mcp` too since the
# MCP tests) so the figures do not move with the test tools.
# The Node side of MCP (@modelcontextprotocol/sdk) is a dependency (the bridge is an MCP client), installed by npm ci.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_REAL_MODEL=0 bash scripts/setup.sh

if [ ! -x bench/.venv/bin/python ]; then
  echo "bench: python venv (bench/.venv)" >&2
  python3 -m venv bench/.venv
fi
if ! bench/.venv/bin/python -c 'import deepseek_harness, mcp' 2>/dev/null; then
  echo "bench: pip install python/sdk and mcp into bench/.venv" >&2
  bench/.venv/bin/python -m pip install --quiet --disable-pip-version-check -e python/sdk 'mcp>=1.9'
fi
exec bench/.venv/bin/python bench/run.py "$@"

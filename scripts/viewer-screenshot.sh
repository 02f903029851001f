#!/usr/bin/env bash
# Regenerates docs/viewer.png, the README's picture of the session viewer: the screenshot the
# browser test takes (python/sdk/tests/test_viewer_browser.py, the timeline of a scripted
# session with a tool call, an edit's diff and an XSS payload shown as text). Needs chromium and
# chromium-driver (apt-get install chromium chromium-driver) and a built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
HARNESS_REQUIRE_BROWSER=1 HARNESS_VIEWER_SCREENSHOT=docs/viewer.png \
  .venv/bin/python -m pytest python/sdk/tests/test_viewer_browser.py -q -k test_list_timeline
echo "wrote docs/viewer.png"

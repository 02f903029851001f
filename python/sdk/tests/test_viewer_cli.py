"""``python -m deepseek_harness view``: becomes the binary's ``harness-bridge view`` (the viewer
itself is tested in test/viewer/ and, in a browser, in test_viewer_browser.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import real_bridge_or_skip


def test_view_forwards_to_the_binary_prints_the_url_and_stops_on_sigint(tmp_path: Path) -> None:
    bridge = real_bridge_or_skip()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = dict(os.environ, HARNESS_BRIDGE_BIN=str(bridge))
    child = subprocess.Popen([sys.executable, "-m", "deepseek_harness", "view", "--session-root", str(tmp_path / "root"), "--workspace", str(workspace)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        with urllib.request.urlopen(f"{url}api/sessions", timeout=30) as response:
            listing = json.loads(response.read())
        assert listing["workspace"] == str(workspace) and listing["sessions"] == []
        # The loopback check is the binary's: another Host is refused.
        request = urllib.request.Request(url, headers={"Host": "attacker.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 403
        child.send_signal(signal.SIGINT)
        assert child.wait(30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_view_usage_errors_are_the_binarys(tmp_path: Path) -> None:
    bridge = real_bridge_or_skip()
    env = dict(os.environ, HARNESS_BRIDGE_BIN=str(bridge))
    done = subprocess.run([sys.executable, "-m", "deepseek_harness", "view", "--host", "0.0.0.0"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert "--host" in done.stderr


def test_view_without_a_binary_says_how_to_get_one(tmp_path: Path) -> None:
    env = dict(os.environ, HARNESS_BRIDGE_BIN=str(tmp_path / "missing"))
    done = subprocess.run([sys.executable, "-m", "deepseek_harness", "view"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert "error:" in done.stderr and "harness-bridge" in done.stderr

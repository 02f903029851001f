"""The bundled binary without its executable bit (a wheel installer that dropped it) is made
executable by the SDK; where it cannot be (a read-only install: a container image's
site-packages, a read-only bind mount), BridgeNotFoundError said only "is not executable". Now
it says the SDK's chmod failed and why, and what to do: reinstall, or HARNESS_BRIDGE_BIN."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import json, sys
from pathlib import Path
from deepseek_harness import BridgeNotFoundError, DeepSeekHarness, _binary
_binary.bundled_binary_path = lambda: Path(sys.argv[1])
try:
    DeepSeekHarness(provider="scripted", model="demo", cwd=sys.argv[2], session_root=sys.argv[2]).start()
    print(json.dumps({"raised": None}))
except BridgeNotFoundError as exc:
    print(json.dumps({"raised": type(exc).__name__, "message": str(exc), "tried": exc.tried}))
"""


def test_a_bundled_binary_on_a_read_only_mount_says_chmod_failed_and_what_to_do(tmp_path: Path) -> None:
    unshare, mount = shutil.which("unshare"), shutil.which("mount")
    if os.geteuid() != 0 or unshare is None or mount is None:
        pytest.skip("needs root and unshare, for a mount namespace with a read-only bind mount")
    install = tmp_path / "_bin"
    install.mkdir()
    binary = install / "harness-bridge"
    binary.write_text("#!/bin/sh\nexit 0\n")  # a stand-in: only its mode and its mount are looked at
    binary.chmod(0o644)  # the executable bit lost
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "HARNESS_BRIDGE_BIN", "HARNESS_BRIDGE_DEV_CHECKOUT")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    env["PATH"] = str(tmp_path / "empty")  # no harness-bridge on PATH either
    # The bind mount exists in the child's own mount namespace only, and ends with it.
    script = '"$1" --bind -o ro "$2" "$2" && exec "$3" -c "$4" "$5" "$6"'
    run = subprocess.run([unshare, "-m", "--propagation", "private", "/bin/sh", "-c", script, "sh", mount, str(install),
                          sys.executable, CHILD, str(binary), str(workspace)],
                         env=env, capture_output=True, text=True, timeout=120)
    if run.returncode != 0 and "mount" in run.stderr and not run.stdout:
        pytest.skip(f"cannot make a read-only bind mount here: {run.stderr[-300:]}")
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["raised"] == "BridgeNotFoundError", answer
    message = answer["message"]
    assert f"{binary}: is not executable, and the SDK could not make it so (chmod: Read-only file system" in message, message
    assert "pip install --force-reinstall deepseek-harness" in message and "HARNESS_BRIDGE_BIN" in message
    assert not os.access(binary, os.X_OK)  # outside the namespace nothing was changed either


def test_a_bundled_binary_that_can_be_made_executable_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deepseek_harness import _binary

    binary = tmp_path / "harness-bridge"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o644)
    monkeypatch.setattr(_binary, "bundled_binary_path", lambda: binary)
    assert _binary.bundled_binary_problem() is None
    assert os.access(binary, os.X_OK)

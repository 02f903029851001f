"""A bridge started under an open-file limit too low for Node.js to start: the SDK raises
:class:`OpenFileLimitError` naming the limit and what to do, not a bare "harness-bridge exited
(exit code -11)". CI and batch jobs can run with odd limits; Node crashes (SIGABRT, SIGSEGV)
before any of the bridge's code runs when its limit is below about 20, so only the
SDK can say why.

The low-limit case runs in a child Python that lowers its own limit first: the bridge inherits
the limit of the process that spawns it, and a hard limit cannot be raised back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from deepseek_harness import DeepSeekHarness, OpenFileLimitError, TransportClosedError

from conftest import call_within, real_bridge_or_skip

#: Python itself, its pipes to the bridge and the spawn's own pipe fit in 12; Node.js does not.
LOW_LIMIT = 12

CHILD = """
import json, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
from deepseek_harness import DeepSeekHarness, TransportClosedError
try:
    with DeepSeekHarness(provider="scripted", model="demo", cwd=sys.argv[3], session_root=sys.argv[4],
                         bridge_bin=sys.argv[2], shutdown_timeout_seconds=5) as h:
        h.run("hello")
    print(json.dumps({"raised": None}))
except TransportClosedError as exc:
    print(json.dumps({"raised": type(exc).__name__, "message": str(exc), "exit_code": exc.exit_code,
                      "limit": getattr(exc, "limit", None)}))
"""


def test_a_bridge_that_cannot_start_under_a_low_limit_names_the_limit(tmp_path: Path) -> None:
    bridge = real_bridge_or_skip()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(LOW_LIMIT), str(bridge), str(workspace), str(tmp_path / "sessions")],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["raised"] == "OpenFileLimitError", answer
    assert answer["limit"] == LOW_LIMIT
    assert answer["exit_code"] is not None and answer["exit_code"] != 0
    assert f"the open-file limit is {LOW_LIMIT}" in answer["message"]
    assert "ulimit -n" in answer["message"]


def test_a_crash_under_an_ordinary_limit_is_not_blamed_on_it(tmp_path: Path) -> None:
    """The same death (SIGSEGV at start) with descriptors to spare stays a plain
    TransportClosedError: the limit is named only where it is the likely cause."""
    crashing = tmp_path / "crashing-bridge"
    crashing.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    h = DeepSeekHarness(provider="scripted", model="demo", cwd=workspace, session_root=tmp_path / "sessions",
                        bridge_bin=crashing, shutdown_timeout_seconds=5)
    try:
        try:
            call_within(60, h.run, "hello")
        except TransportClosedError as exc:
            assert not isinstance(exc, OpenFileLimitError)
            assert exc.exit_code == -11
        else:
            raise AssertionError("a bridge that crashed answered")
    finally:
        h.close()


def test_a_crash_after_the_bridge_answered_is_not_blamed_on_a_low_limit(tmp_path: Path) -> None:
    """Under a hard limit below 64 that Node starts with, a bridge that has written to stdout
    has started: its later death by SIGABRT (as a V8 out-of-memory abort is) stays a plain
    TransportClosedError, while the same death before any output is the limit's."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    answers = {}
    for name, before in (("answered", 'printf \'{"jsonrpc":"2.0","method":"log","params":{}}\\n\'; sleep 0.3; '), ("silent", "")):
        bridge = tmp_path / f"{name}-bridge"
        bridge.write_text(f"#!/bin/sh\n{before}kill -ABRT $$\n")
        bridge.chmod(0o755)
        run = subprocess.run(
            [sys.executable, "-c", CHILD, "40", str(bridge), str(workspace), str(tmp_path / "sessions")],
            capture_output=True, text=True, timeout=120, env=env,
        )
        assert run.returncode == 0, run.stderr
        answers[name] = json.loads(run.stdout.strip().splitlines()[-1])
    assert answers["answered"]["raised"] == "TransportClosedError", answers
    assert answers["answered"]["exit_code"] == -6
    assert answers["silent"]["raised"] == "OpenFileLimitError", answers


def test_a_wrapper_whose_command_is_missing_is_not_blamed_on_a_low_limit(tmp_path: Path) -> None:
    """Exit 127 is the dynamic loader's when it cannot open a library for want of descriptors
    (it says "Error 24" on stderr then), and any shell's for a command not found: a wrapper
    script whose command is missing, under a hard limit below 64, is the missing command."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(f"#!/bin/sh\nexec {tmp_path / 'no-such-bridge'} \"$@\"\n")
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    run = subprocess.run(
        [sys.executable, "-c", CHILD, "40", str(wrapper), str(workspace), str(tmp_path / "sessions")],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["raised"] == "TransportClosedError", answer
    assert answer["exit_code"] == 127
    assert f"{wrapper} exited with 127" in answer["message"] and "not found" in answer["message"], answer

"""A bridge that never answers ``initialize`` (Node.js hangs so at start under a low process
limit, before any of the bridge's code runs) no longer hangs the SDK for ever: the start is
bounded by ``start_timeout_seconds`` (the MCP servers' own start added), the bridge is killed and
reaped, and :class:`BridgeStartTimeoutError` says why when it can tell. A bridge that aborts
under such a limit is :class:`ProcessLimitError`, as one under a low open-file limit is
:class:`OpenFileLimitError`.

The process limit (RLIMIT_NPROC) is not enforced for root, so the real-binary cases run a child
Python as ``nobody`` (setpriv) with its own limit lowered; they need root to switch users.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from deepseek_harness import (
    BridgeStartTimeoutError, HarnessOptions, ProcessLimitError, RequestTimeoutError, TransportClosedError,
)
from deepseek_harness._internal.start_timeout import initialize_wait, start_bound

from conftest import Backend, call_within, real_bridge_or_skip, run_async, wait_until

# The fake bridge sleeps this long before it answers initialize: for ever, as far as a test goes.
NEVER = {"FAKE_BRIDGE_MODE": "slow-initialize", "FAKE_BRIDGE_DELAY": "3600"}


def _killed_and_reaped(exc: BridgeStartTimeoutError, process: Any) -> None:
    assert isinstance(exc, TransportClosedError) and isinstance(exc, RequestTimeoutError)
    assert exc.method == "initialize" and exc.timeout_seconds == 1
    assert "did not answer initialize within 1 s (start_timeout_seconds), so it was killed" in str(exc), str(exc)
    assert process.returncode == -9  # SIGKILL, and waited for (Popen has its status: reaped)
    assert exc.exit_code == -9


def test_a_harness_whose_bridge_never_answers_initialize_raises(fake: Backend) -> None:
    h = fake.harness(env=NEVER, start_timeout_seconds=1)
    with pytest.raises(BridgeStartTimeoutError) as info:
        call_within(60, h.run, "hello")
    _killed_and_reaped(info.value, h.client.process)


def test_an_async_harness_whose_bridge_never_answers_initialize_raises(fake: Backend) -> None:
    h = fake.async_harness(env=NEVER, start_timeout_seconds=1)

    async def main() -> None:
        async with h:
            await h.run("hello")

    with pytest.raises(BridgeStartTimeoutError) as info:
        run_async(main(), 60)
    _killed_and_reaped(info.value, h._harness.client.process)


def test_a_client_whose_bridge_never_answers_initialize_raises_and_closes(fake: Backend) -> None:
    c = fake.client(env=NEVER, start_timeout_seconds=1).start()
    process = c.process
    with pytest.raises(BridgeStartTimeoutError) as info:
        call_within(60, c.initialize, fake.workspace, "scripted", "demo")
    _killed_and_reaped(info.value, process)
    assert c.closed
    with pytest.raises(TransportClosedError):
        c.session_prompt("s", "hi")


def test_a_shorter_request_timeout_still_bounds_initialize(fake: Backend) -> None:
    c = fake.client(env=NEVER, request_timeout_seconds=1).start()  # start_timeout_seconds: the default 60
    with pytest.raises(BridgeStartTimeoutError) as info:
        call_within(60, c.initialize, fake.workspace, "scripted", "demo")
    assert "(request_timeout_seconds)" in str(info.value)
    assert c.process.returncode == -9


def test_the_default_bound_and_what_it_adds_for_mcp_servers() -> None:
    assert HarnessOptions().start_timeout_seconds == 60
    assert start_bound(60, None) == 60 and start_bound(60, {}) == 60
    assert start_bound(None, {"a": {"command": "x"}}) is None
    # Started in parallel: the longest startupTimeoutMs (30 s when none is given) plus 5 s.
    assert start_bound(60, {"a": {"command": "x"}}) == 95
    assert start_bound(60, {"a": {"command": "x"}, "b": {"url": "http://h/mcp", "startupTimeoutMs": 120_000}}) == 185
    assert initialize_wait(None, None, 60) == (60, "start_timeout_seconds")
    assert initialize_wait(None, 5, 60) == (5, "request_timeout_seconds")
    assert initialize_wait(None, 500, 60) == (60, "start_timeout_seconds")
    assert initialize_wait(2, 500, 60) == (2, "timeout=")
    assert initialize_wait(None, None, None) == (None, "start_timeout_seconds")


def test_an_mcp_servers_start_is_not_cut(fake: Backend) -> None:
    # initialize answers once every MCP server has connected or failed: a server's own
    # startupTimeoutMs extends the bound, so a start that takes longer than start_timeout_seconds
    # alone (the fake answers after 3 s) but within it is not cut.
    h = fake.harness(env={"FAKE_BRIDGE_MODE": "slow-initialize", "FAKE_BRIDGE_DELAY": "3"}, start_timeout_seconds=1,
                     mcp_servers={"slow": {"command": "true", "startupTimeoutMs": 20_000}})
    assert call_within(120, h.run, "hello").status == "ok"


# ------------------------------------------------------------------ the real binary, as nobody

CHILD = """
import json, resource, sys
limit, bridge, workspace = int(sys.argv[1]), sys.argv[2], sys.argv[3]
resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
from deepseek_harness import DeepSeekHarness, HarnessError
try:
    with DeepSeekHarness(provider="scripted", model="demo", cwd=workspace, session_root=workspace + "/sessions",
                         bridge_bin=bridge, shutdown_timeout_seconds=5, start_timeout_seconds=5) as h:
        result = h.run("hello")
    print(json.dumps({"raised": None, "status": result.status}))
except HarnessError as exc:
    print(json.dumps({"raised": type(exc).__name__, "message": str(exc), "exit_code": getattr(exc, "exit_code", None),
                      "soft_limit": getattr(exc, "soft_limit", getattr(exc, "process_soft_limit", None))}))
"""


@pytest.fixture
def as_nobody() -> Iterator[Dict[str, Any]]:
    """A workspace nobody may write, and the environment of a child Python run as nobody."""
    bridge = real_bridge_or_skip()
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv: the process limit is not enforced for root, so the child runs as nobody")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = src
    workspace = tempfile.mkdtemp(prefix="nproc-")
    try:
        os.chmod(workspace, 0o777)
        probe = subprocess.run(_as_nobody([sys.executable, "-c", "import deepseek_harness"]), env=env,
                               capture_output=True, text=True, timeout=60)
        if probe.returncode != 0 or not os.access(bridge, os.X_OK):
            pytest.skip(f"nobody cannot import the SDK or run the binary here: {probe.stderr[-300:]}")
        if _tasks_of(_NOBODY) > 0:
            pytest.skip("nobody runs processes here: the limits below were measured with none of its own")
        yield {"env": env, "workspace": workspace, "bridge": str(bridge)}
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


_NOBODY = pwd.getpwnam("nobody").pw_uid if sys.platform != "win32" else -1


def _tasks_of(uid: int) -> int:
    """The tasks (processes and threads) ``uid`` runs: what RLIMIT_NPROC counts."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                total += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return total


def _as_nobody(cmd: list) -> list:
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *cmd]


def _child(setup: Dict[str, Any], limit: int) -> Dict[str, Any]:
    run = subprocess.run(_as_nobody([sys.executable, "-c", CHILD, str(limit), setup["bridge"], setup["workspace"]]),
                         env=setup["env"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    answer: Dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    # Killed and reaped: nothing of nobody's outlives the child (a bridge stuck at start would).
    assert wait_until(lambda: _tasks_of(_NOBODY) == 0), "a bridge outlived the child Python"
    return answer


def test_a_bridge_that_hangs_under_a_low_process_limit_is_killed_and_blamed_on_it(as_nobody: Dict[str, Any]) -> None:
    # Measured: with the child Python's 3 tasks counted, Node.js waits for ever at start under a
    # limit of 6 (its main thread on a futex), before any of the bridge's code runs. The blocking
    # front only: under such a limit the asyncio front's own threads (to_thread's worker, the
    # event loop's executor at its close) cannot be started either, and it starts the bridge
    # through the same blocking start (the fake-bridge case above covers it).
    answer = _child(as_nobody, 6)
    assert answer["raised"] == "BridgeStartTimeoutError", answer
    assert answer["exit_code"] == -9 and answer["soft_limit"] == 6
    assert "the process limit is 6 (ulimit -u" in answer["message"], answer["message"]


def test_a_bridge_that_aborts_under_a_low_process_limit_names_the_limit(as_nobody: Dict[str, Any]) -> None:
    # Measured: under a limit of 12 Node.js starts, answers, then aborts (SIGABRT) when it cannot
    # create the threads of a turn; a plain "harness-bridge exited (exit code -6)" before.
    answer = _child(as_nobody, 12)
    assert answer["raised"] == "ProcessLimitError", answer
    assert answer["exit_code"] == -6 and answer["soft_limit"] == 12
    assert "the process limit is 12 (ulimit -u" in answer["message"], answer["message"]
    assert issubclass(ProcessLimitError, TransportClosedError)


def test_a_bridge_that_runs_under_an_ample_process_limit_is_not_touched(as_nobody: Dict[str, Any]) -> None:
    assert _child(as_nobody, 256) == {"raised": None, "status": "ok"}


def test_a_bridge_whose_reader_thread_cannot_start_is_killed(fake: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    # Under a low `ulimit -u` the SDK's own threads may not start either ("can't start new
    # thread"): the bridge spawned just before was left running for ever (stuck at start, it
    # does not notice its parent's exit). Now it is killed and reaped, and the error raised.
    import threading

    from deepseek_harness._internal import connection

    spawned: list = []

    class Recorded(connection.BridgeProcess):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            spawned.append(self)

    start = threading.Thread.start

    def no_reader(thread: threading.Thread) -> None:
        if thread.name == "harness-bridge-reader":
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(connection, "BridgeProcess", Recorded)
    monkeypatch.setattr(threading.Thread, "start", no_reader)
    c = fake.client()
    with pytest.raises(RuntimeError, match="can't start new thread"):
        call_within(60, c.start)
    assert len(spawned) == 1 and spawned[0].proc.returncode == -9


@pytest.mark.parametrize("value", [float("nan"), 0, 0.0, -1, "60", True])
def test_a_start_timeout_that_cannot_bound_a_start_is_refused_not_a_killed_bridge(fake: Backend, value: Any) -> None:
    # NaN, 0 or a negative number timed every start out at once: a healthy bridge was killed and
    # BridgeStartTimeoutError said it was stuck or the machine overloaded.
    with pytest.raises(ValueError, match="start_timeout_seconds"):
        HarnessOptions(start_timeout_seconds=value)
    c = fake.client().start()  # the attribute, changed after the options were checked
    c.start_timeout_seconds = value
    with pytest.raises(ValueError, match="start_timeout_seconds"):
        call_within(60, c.initialize, fake.workspace, "scripted", "demo")
    assert c.process is not None and c.process.poll() is None  # not killed


def test_an_infinite_start_timeout_is_no_bound() -> None:
    assert start_bound(float("inf"), None) == float("inf")

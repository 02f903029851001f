"""A process forked from one that started a harness (``os.fork``, ``multiprocessing`` with the
fork start method) holds a copy of the harness but not its bridge: the bridge answers the
parent, and the child has no reader thread. Every call in the child raises
:class:`TransportClosedError` at once, saying so (not an exit code the bridge never had), and
the child's ``close()`` — explicit, or at its exit — leaves the parent's bridge serving."""

from __future__ import annotations

import json
import os

import pytest

from deepseek_harness.errors import TransportClosedError

from conftest import Backend, call_within

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX's")


def child_report(h: object) -> dict:
    """What the forked child sees, run in the child."""
    report: dict = {}
    try:
        h.run("from the child")  # type: ignore[attr-defined]
        report["run"] = "answered"
    except TransportClosedError as exc:
        report["run"] = {"error": str(exc), "exit_code": exc.exit_code}
    except BaseException as exc:  # noqa: BLE001
        report["run"] = {"unexpected": repr(exc)}
    h.close()  # type: ignore[attr-defined]
    report["closed"] = True
    return report


def fork_and_report(h: object) -> dict:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then exit at once (no pytest teardown in here)
        try:
            os.close(read_end)
            os.write(write_end, json.dumps(child_report(h)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end, "rb") as reader:
        chunks.append(reader.read())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(b"".join(chunks) or b"{}")


def test_a_forked_child_gets_a_clear_error_and_leaves_the_parents_bridge_alone(backend: Backend) -> None:
    h = backend.harness()
    assert h.run("before the fork").status == "ok"
    bridge = h.client.process
    report = call_within(60, fork_and_report, h)
    assert report.get("closed") is True, report
    run = report["run"]
    assert isinstance(run, dict) and "error" in run, report
    assert "fork" in run["error"] and str(os.getpid()) in run["error"]
    assert run["exit_code"] is None
    assert bridge.poll() is None, "the child's close() stopped the parent's bridge"
    assert call_within(60, h.run, "after the fork").status == "ok"

"""A process forked from one that started a harness (``os.fork``, ``multiprocessing`` with the
fork start method) holds a copy of the harness but not its bridge: the bridge answers the
parent, and the child has no reader thread. Every call in the child raises
:class:`TransportClosedError` at once, saying so (not an exit code the bridge never had), and
the child's ``close()`` — explicit, or at its exit — leaves the parent's bridge serving. That
holds whatever another thread of the parent was doing at the fork (starting the harness,
closing it), and the child keeps no copy of the bridge's pipes."""

from __future__ import annotations

import json
import os
import sys
import threading

import pytest

from deepseek_harness.errors import TransportClosedError

from conftest import Backend, call_within, wait_until

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


def fork_within(seconds: float, work: "object") -> dict:
    """Forks; the child runs ``work()`` on a thread and reports its dict, or that it hung (and
    exits either way: a child that hung must not outlive the test)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            box: dict = {}
            worker = threading.Thread(target=lambda: box.update(work()), daemon=True)  # type: ignore[operator]
            worker.start()
            worker.join(seconds)
            os.write(write_end, json.dumps({"hung": True} if worker.is_alive() else box).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        data = reader.read()
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


def test_a_fork_made_while_another_thread_starts_the_harness(fake: Backend) -> None:
    # A thread of the parent is inside start(), initialize in flight, when the program forks (a
    # lazily started module-level harness, a multiprocessing pool made meanwhile): the child's
    # copy of the harness's start lock is held by a thread the child does not have.
    h = fake.harness(env={"FAKE_BRIDGE_MODE": "slow-initialize", "FAKE_BRIDGE_DELAY": "3"})
    starting = threading.Thread(target=h.start, daemon=True)
    starting.start()
    assert wait_until(lambda: h.client.process is not None)

    def child() -> dict:
        try:
            h.run("from the child")
            return {"run": "answered"}
        except TransportClosedError as exc:
            return {"run": str(exc)}

    report = fork_within(20, child)
    assert "fork" in report.get("run", ""), report
    starting.join(60)
    assert call_within(60, h.run, "after the fork").status == "ok"


def test_a_fork_made_while_the_lifecycle_lock_is_held_exits(fake: Backend) -> None:
    # At the fork a parent thread holds the client's lifecycle lock (inside start() or close()):
    # the child's close(), which its exit hook makes too, must not wait for it for ever.
    h = fake.harness()
    assert h.run("before").status == "ok"
    lock = h.client._lifecycle_lock
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    held.wait(30)
    try:
        report = fork_within(20, lambda: (h.close(), {"closed": True})[1])
    finally:
        release.set()
        holder.join(30)
    assert report == {"closed": True}
    assert h.client.process.poll() is None
    assert call_within(60, h.run, "after the fork").status == "ok"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_a_fork_keeps_no_copy_of_the_bridges_pipes(backend: Backend) -> None:
    h = backend.harness()
    assert h.run("before").status == "ok"
    proc = h.client.process
    pipes = {os.readlink(f"/proc/self/fd/{s.fileno()}") for s in (proc.stdin, proc.stdout, proc.stderr)}

    def child() -> dict:
        held = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                held.add(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return {"held": sorted(held & pipes)}

    assert fork_within(20, child) == {"held": []}
    assert call_within(60, h.run, "after the fork").status == "ok"

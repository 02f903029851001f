"""Approvals (``approvals=``, ``can_use_tool=``) through the real binary and its scripted model:
allow, allow with changed arguments, a deny the model reads and recovers from, a callback that
raises or answers nonsense, sync and async callbacks on both fronts, cancelling a turn that
waits for a decision."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, Dict, List

from deepseek_harness import (
    Allow,
    DeepSeekHarness,
    Deny,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    PermissionResult,
    ToolResultEvent,
    tool,
)
from deepseek_harness._internal.tool_dispatch import POOL_THREAD_PREFIX

from conftest import call_within, real_bridge_or_skip, run_async
from test_client_tools import GUARD, async_harness, call, calls, harness, results, text_of


def write(call_id: str, path: str, content: str = "x\n") -> Dict[str, Any]:
    return call(call_id, "write_file", path=path, content=content)


def test_a_deny_is_the_error_result_the_model_reads_and_it_recovers(tmp_path: Path) -> None:
    asked: List[PermissionRequestEvent] = []

    def can_use_tool(request: PermissionRequestEvent) -> PermissionResult:
        asked.append(request)
        if request.arguments["path"] == "a.txt":
            return Deny("a.txt is protected: write b.txt instead")
        return Allow()

    (tmp_path / "notes.txt").write_text("alpha\n")
    steps = [calls(call("r1", "read_file", path="notes.txt"), write("w1", "a.txt")), calls(write("w2", "b.txt")),
             {"text": "wrote b.txt"}]
    with harness(tmp_path, steps, approvals="writes", can_use_tool=can_use_tool) as h:
        stream = h.stream("go")
        events = list(stream)
    assert stream.result is not None and stream.result.ok
    # writes: read_file (read-only) was not asked about
    assert [(r.call_id, r.name) for r in asked] == [("w1", "write_file"), ("w2", "write_file")]
    decisions = [ev for ev in events if isinstance(ev, PermissionDecisionEvent)]
    assert [(d.request_id, d.decision, d.message) for d in decisions] == [
        (asked[0].request_id, "deny", "a.txt is protected: write b.txt instead"), (asked[1].request_id, "allow", None)]
    denied = [ev for ev in events if isinstance(ev, ToolResultEvent) and ev.call_id == "w1"]
    assert denied[0].is_error and denied[0].text == "a.txt is protected: write b.txt instead"
    assert not (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").read_text() == "x\n"
    assert sum(isinstance(ev, PermissionRequestEvent) for ev in events) == 2


def test_allow_with_changed_arguments_runs_the_call_with_them(tmp_path: Path) -> None:
    def redirect(request: PermissionRequestEvent) -> PermissionResult:
        return Allow(arguments={**request.arguments, "path": "sandbox/" + request.arguments["path"]})

    with harness(tmp_path, [calls(write("w1", "out.txt")), {"text": "done"}], approvals="always",
                 can_use_tool=redirect) as h:
        r = h.run("go")
    assert r.ok and not (tmp_path / "out.txt").exists()
    assert (tmp_path / "sandbox" / "out.txt").read_text() == "x\n"
    [decision] = [ev for ev in r.events if ev.type == "permission/decision"]
    assert decision.data["arguments"] == {"path": "sandbox/out.txt", "content": "x\n"}


def test_an_approved_client_tool_gets_the_allowed_arguments(tmp_path: Path) -> None:
    got: List[str] = []

    @tool  # not read-only: "writes" asks about it
    def record(word: str) -> str:
        """Records a word."""
        got.append(word)
        return "recorded"

    with harness(tmp_path, [calls(call("c1", "record", word="raw")), {"text": "done"}], tools=[record],
                 approvals="writes", can_use_tool=lambda req: Allow(arguments={"word": "edited"})) as h:
        r = h.run("go")
    assert got == ["edited"] and text_of(results(r.events)["c1"]) == "recorded"
    assert [ev.type for ev in r.events if ev.type in ("permission/request", "tool/request")] == [
        "permission/request", "tool/request"]


def test_a_callback_that_raises_or_answers_nonsense_denies_saying_so(tmp_path: Path) -> None:
    def broken(request: PermissionRequestEvent) -> PermissionResult:
        if request.call_id == "w1":
            raise RuntimeError("policy service down")
        return True  # type: ignore[return-value]

    steps = [calls(write("w1", "a.txt"), write("w2", "b.txt")), {"text": "could not write"}]
    with harness(tmp_path, steps, approvals="writes", can_use_tool=broken) as h:
        r = call_within(GUARD, h.run, "go")
    got = results(r.events)
    assert r.ok and not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    assert got["w1"]["isError"] and "RuntimeError: policy service down" in text_of(got["w1"])
    assert got["w2"]["isError"] and "returned bool, not Allow or Deny" in text_of(got["w2"])


def test_callbacks_run_off_the_reader_sync_on_the_pool_async_on_the_callers_loop(tmp_path: Path) -> None:
    where: List[str] = []

    def sync_cb(request: PermissionRequestEvent) -> PermissionResult:
        where.append(threading.current_thread().name)
        return Allow()

    with harness(tmp_path, [calls(write("w1", "a.txt")), {"text": "done"}], approvals="always", can_use_tool=sync_cb) as h:
        assert h.run("go").ok

    async def main() -> bool:
        loop = asyncio.get_running_loop()

        async def async_cb(request: PermissionRequestEvent) -> PermissionResult:
            await asyncio.sleep(0)
            where.append("loop" if asyncio.get_running_loop() is loop else "elsewhere")
            return Deny("no")

        async with async_harness(tmp_path, [calls(write("w1", "b.txt")), {"text": "done"}], approvals="always",
                                 can_use_tool=async_cb) as h:
            return (await h.run("go")).ok

    assert run_async(main(), GUARD)
    assert where[0].startswith(POOL_THREAD_PREFIX) and where[1] == "loop"
    assert (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()


def test_an_async_callback_on_the_blocking_harness(tmp_path: Path) -> None:
    async def async_cb(request: PermissionRequestEvent) -> PermissionResult:
        await asyncio.sleep(0)
        return Deny(f"not {request.arguments['path']}")

    with harness(tmp_path, [calls(write("w1", "a.txt")), {"text": "done"}], approvals="always",
                 can_use_tool=async_cb) as h:
        r = h.run("go")
    assert text_of(results(r.events)["w1"]) == "not a.txt"


def test_cancel_while_waiting_for_a_decision_aborts_and_the_session_goes_on(tmp_path: Path) -> None:
    asked, release = threading.Event(), threading.Event()

    def slow(request: PermissionRequestEvent) -> PermissionResult:
        asked.set()
        release.wait(GUARD)
        return Allow()

    turns = [[calls(write("w1", "a.txt")), {"text": "never"}], [{"text": "second turn"}]]
    with harness(tmp_path, *turns, approvals="writes", can_use_tool=slow) as h:
        session = h.start_session()
        box: Dict[str, Any] = {}
        t = threading.Thread(target=lambda: box.setdefault("r", session.run("go")), daemon=True)
        t.start()
        assert asked.wait(GUARD)
        assert call_within(GUARD, session.cancel) is True
        t.join(GUARD)
        release.set()  # the late allow is refused by the bridge (unknown-request) and dropped
        second = call_within(GUARD, session.run, "again")
    assert box["r"].status == "aborted" and second.final_response == "second turn"
    assert not (tmp_path / "a.txt").exists()
    assert not [ev for ev in box["r"].events if ev.type == "permission/decision"]


def test_a_subagents_calls_are_asked_about_with_the_childs_session(tmp_path: Path) -> None:
    asked: List[PermissionRequestEvent] = []

    def record(request: PermissionRequestEvent) -> PermissionResult:
        asked.append(request)
        return Allow() if request.name == "task" else Deny("children may not write")

    script = {"turns": [{"steps": [calls(call("t1", "task", prompt="write it", description="child")),
                                   {"text": "parent done"}]}],
              "subagent": {"turns": [{"steps": [calls(write("w1", "child.txt")), {"text": "child gave up"}]}]}}
    path = tmp_path / "subagent-script.json"
    path.write_text(json.dumps(script))
    with DeepSeekHarness(provider="scripted", model=str(path), cwd=tmp_path, bridge_bin=real_bridge_or_skip(),
                         session_root=tmp_path / "sessions", approvals="writes", can_use_tool=record) as h:
        r = call_within(GUARD, h.run, "delegate", session_id="parent")
    assert r.ok and not (tmp_path / "child.txt").exists()
    assert [(a.name, a.session_id == "parent") for a in asked] == [("task", True), ("write_file", False)]
    child_results = [n.payload["event"]["data"] for n in r.notifications
                     if n.method == "session.event" and n.payload["sessionId"] == asked[1].session_id
                     and n.payload["event"]["type"] == "tool/result"]
    assert child_results[0]["isError"] and text_of(child_results[0]) == "children may not write"

"""Hooks (``hooks=Hooks(prompt_submit=..., post_tool=..., stop=...)``) through the real binary
and its scripted model: each hook point's answers and what the turn does with them, sync and
``async`` functions on both fronts (run on the worker pool, or on the caller's loop), functions
that raise or return nonsense (failing closed where the hook guards), a stop hook that never
lets go (``max-steps``), cancelling a turn while a hook runs, and the low-level client's
``session_hook`` with its refusals."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from deepseek_harness import (
    HarnessClient,
    HookDecisionEvent,
    HookRequestEvent,
    Hooks,
    InvalidParamsError,
    PostToolAnswer,
    PromptSubmitAnswer,
    StopAnswer,
)
from deepseek_harness._internal.tool_dispatch import POOL_THREAD_PREFIX

from conftest import real_bridge_or_skip, run_async
from test_client_tools import async_harness, call, calls, harness, script_file


def decisions(events: List[Any]) -> List[HookDecisionEvent]:
    """The typed decisions of a stream."""
    return [ev for ev in events if isinstance(ev, HookDecisionEvent)]


def logged(events: List[Any], type_: str) -> List[Dict[str, Any]]:
    """The data of a TurnResult's durable events of one type."""
    return [ev.data for ev in events if ev.type == type_]


def text(data: Dict[str, Any]) -> str:
    return "".join(b["text"] for b in data["content"])


def test_a_stop_hook_sends_the_model_back_until_it_lets_the_turn_end(tmp_path: Path) -> None:
    asked: List[HookRequestEvent] = []
    threads: List[str] = []

    def stop(event: HookRequestEvent) -> Optional[StopAnswer]:
        asked.append(event)
        threads.append(threading.current_thread().name)
        return StopAnswer(continue_with="the tests fail: test_add") if len(asked) == 1 else None

    with harness(tmp_path, [{"text": "done"}, {"text": "really done"}], hooks=Hooks(stop=stop)) as h:
        r = h.run("fix it")
    assert r.ok and r.final_response == "really done"
    assert [(e.hook, e.text) for e in asked] == [("stop", "done"), ("stop", "really done")]
    assert all(name.startswith(POOL_THREAD_PREFIX) for name in threads), threads
    assert [(d["hookId"], d.get("continue")) for d in logged(r.events, "hook/decision")] == [(asked[0].hook_id, "the tests fail: test_add"),
                                                                        (asked[1].hook_id, None)]


def test_a_stop_hook_that_always_continues_ends_at_max_steps(tmp_path: Path) -> None:
    steps = [{"text": f"done {n}"} for n in range(5)]
    with harness(tmp_path, steps, max_steps=2, hooks=Hooks(stop=lambda ev: StopAnswer(continue_with="not yet"))) as h:
        r = h.run("go")
    assert r.status == "error" and r.reason.kind == "max-steps" and r.reason.limit == 2


def test_prompt_submit_blocks_a_prompt_naming_a_forbidden_path_on_the_async_front(tmp_path: Path) -> None:
    loops: List[Any] = []

    async def guard(event: HookRequestEvent) -> Optional[PromptSubmitAnswer]:
        loops.append(asyncio.get_running_loop())
        if "secrets/" in event.content_text:
            return PromptSubmitAnswer(block="prompts may not name secrets/")
        return PromptSubmitAnswer(context="Answer in one line.")

    async def main() -> Any:
        async with async_harness(tmp_path, [{"text": "fine"}], [{"text": "fine again"}], hooks=Hooks(prompt_submit=guard)) as h:
            session = h.start_session()
            blocked = await session.run("print secrets/key.pem")
            ok = await session.run("hello")
            return blocked, ok, asyncio.get_running_loop()

    blocked, ok, loop = run_async(main())
    assert blocked.status == "error" and blocked.reason.kind == "blocked"
    assert blocked.reason.message == "prompts may not name secrets/"
    assert not any(ev.type == "step/start" for ev in blocked.events)
    assert ok.ok and logged(ok.events, "hook/decision")[0]["context"] == "Answer in one line."
    assert loops == [loop, loop]  # async hooks run on the caller's loop


def test_post_tool_appends_context_and_may_replace_the_result(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")

    async def post_tool(event: HookRequestEvent) -> Optional[PostToolAnswer]:  # async on the blocking front
        if event.call_id == "r1":
            return PostToolAnswer(context=f"lint: {event.name} saw alpha: {'alpha' in event.content_text}")
        return PostToolAnswer(content="[redacted]", is_error=True)

    steps = [calls(call("r1", "read_file", path="a.txt"), call("r2", "read_file", path="a.txt")), {"text": "done"}]
    with harness(tmp_path, steps, hooks=Hooks(post_tool=post_tool)) as h:
        r = h.run("go")
    assert r.ok
    results = {d["callId"]: d for d in logged(r.events, "tool/result")}
    assert results["r1"]["content"][-1]["text"] == "lint: read_file saw alpha: True"
    assert "alpha" in results["r1"]["content"][0]["text"] and not results["r1"]["isError"]
    assert text(results["r2"]) == "[redacted]" and results["r2"]["isError"]


def test_hooks_that_raise_or_answer_nonsense_fail_closed_where_they_guard(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("secret material\n")

    def broken(event: HookRequestEvent) -> Any:
        raise RuntimeError("the linter is not installed")

    with harness(tmp_path, [calls(call("r1", "read_file", path="a.txt")), {"text": "done"}], [{"text": "x"}],
                 hooks=Hooks(post_tool=broken, stop=lambda ev: "yes please")) as h:
        r = h.run("go")
    # post-tool: the output is withheld; stop: a wrong answer lets the turn end.
    [result] = logged(r.events, "tool/result")
    assert result["isError"] and "secret material" not in text(result) and "the linter is not installed" in text(result)
    assert r.ok

    with harness(tmp_path, [{"text": "never"}], hooks=Hooks(prompt_submit=broken)) as h:
        blocked = h.run("go")
    assert blocked.reason.kind == "blocked" and "RuntimeError: the linter is not installed" in str(blocked.reason.message)


def test_an_answer_whose_fields_have_the_wrong_type_fails_closed_like_a_wrong_answer(tmp_path: Path) -> None:
    """A field of another type than the answer's (a list for a text, a string for a flag) is
    not coerced into something that looks meant (``is_error="false"`` is truthy, ``str()`` of a
    list is its repr): the answer is refused as a wrong one, failing closed where it guards."""
    (tmp_path / "a.txt").write_text("secret material\n")
    wrong: Dict[str, Any] = {
        "post_tool": lambda ev: PostToolAnswer(content=["[redacted]"], is_error="false"),  # type: ignore[arg-type]
        "stop": lambda ev: StopAnswer(continue_with=True),  # type: ignore[arg-type]
    }
    with harness(tmp_path, [calls(call("r1", "read_file", path="a.txt")), {"text": "done"}], [{"text": "x"}],
                 hooks=Hooks(**wrong)) as h:
        r = h.run("go")
    [result] = logged(r.events, "tool/result")
    assert result["isError"] and "secret material" not in text(result) and "TypeError" in text(result), result
    assert "['[redacted]']" not in text(result)
    # stop: a wrong answer lets the turn end; no continue was sent.
    stops = [d for d in logged(r.events, "hook/decision") if d["hook"] == "stop"]
    assert r.ok and len(stops) == 1 and "continue" not in stops[0], stops

    with harness(tmp_path, [{"text": "never"}],
                 hooks=Hooks(prompt_submit=lambda ev: PromptSubmitAnswer(context=["look at b.txt"]))) as h:  # type: ignore[arg-type]
        blocked = h.run("go")
    assert blocked.reason.kind == "blocked" and "TypeError" in str(blocked.reason.message)


def test_an_async_hook_that_raises_cancelled_error_itself_is_answered_as_a_failure(tmp_path: Path) -> None:
    """CancelledError out of the user's coroutine (an inner task it awaited was cancelled) is
    not the dispatcher cancelling the job: the job still answers, failing closed, instead of
    leaving the turn waiting until the bridge's deadline."""
    (tmp_path / "a.txt").write_text("secret material\n")

    async def post_tool(event: HookRequestEvent) -> Optional[PostToolAnswer]:
        inner = asyncio.get_running_loop().create_future()
        inner.cancel()
        return await inner  # raises CancelledError

    async def main() -> Any:
        async with async_harness(tmp_path, [calls(call("r1", "read_file", path="a.txt")), {"text": "done"}],
                                 hooks=Hooks(post_tool=post_tool), client_tool_timeout_seconds=120) as h:
            return await h.start_session().run("go")

    r = run_async(main())
    [decision] = logged(r.events, "hook/decision")
    assert "skipped" not in decision and decision["isError"], decision  # answered, not skipped at the deadline
    [result] = logged(r.events, "tool/result")
    assert result["isError"] and "secret material" not in text(result) and "CancelledError" in text(result)


def test_cancelling_a_turn_while_a_hook_runs_records_no_decision(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_stop(event: HookRequestEvent) -> Optional[StopAnswer]:
        entered.set()
        release.wait(30)
        return None

    with harness(tmp_path, [{"text": "done"}], [{"text": "second"}], hooks=Hooks(stop=slow_stop)) as h:
        session = h.start_session()
        stream = session.stream("go")
        canceller = threading.Thread(target=lambda: (entered.wait(30), session.cancel()))
        canceller.start()
        events = list(stream)
        canceller.join(30)
        release.set()
    assert stream.result is not None and stream.result.status == "aborted"
    assert any(isinstance(ev, HookRequestEvent) for ev in events) and decisions(events) == []


def test_hooks_is_checked_when_the_harness_is_made(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        Hooks(stop="pytest")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        harness(tmp_path, [{"text": "x"}], hooks=["stop"])


def test_the_low_level_client_answers_hooks_itself(tmp_path: Path) -> None:
    model = script_file(tmp_path, [{"text": "done"}])
    with HarnessClient(bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions") as client:
        client.initialize(tmp_path, "scripted", model, hooks=["stop"])
        answered: List[str] = []

        def on_notification(n: Any) -> None:
            event = n.payload.get("event", {})
            if event.get("type") != "hook/request":
                return
            hook_id = event["data"]["hookId"]
            with pytest.raises(InvalidParamsError) as wrong:
                client.session_hook("s1", hook_id, block="not a stop hook's field")
            assert wrong.value.kind == "invalid-params"
            with pytest.raises(InvalidParamsError) as unknown:
                client.session_hook("s1", "hook_nobody")
            assert unknown.value.kind == "unknown-hook"
            client.session_hook("s1", hook_id)
            answered.append(hook_id)

        result = client.session_prompt("s1", "go", on_notification=on_notification)
    assert result.status == "ok" and len(answered) == 1

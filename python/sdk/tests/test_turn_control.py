"""Turn control through the real binary (scripted model), on both fronts: ``session.steer()``
from another thread (sync) or task (async) while ``run()`` waits, the typed ``UserSteer``
event, steering with no turn in flight; ``TurnResult.cost_usd``, the session total,
``max_cost_usd=`` ending a turn ``budget``, and the bridge's -32602 for bad budgets and prices.

Determinism: a client tool holds the turn's first step open until the steer request has been
written to the bridge (a spy on the connection's send says when), so the steer is on the wire
before the tool's result: the order of requests, not a race.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from deepseek_harness import (AsyncDeepSeekHarness, DeepSeekHarness, InvalidParamsError, JsonRpcError, Prices,
                              ToolResultEvent, UserSteer, tool)

from conftest import real_bridge_or_skip, run_async

GUARD = 60.0
STEP1 = {"inputTokens": 1000, "outputTokens": 100, "cacheHitTokens": 400}
STEP2 = {"inputTokens": 2000, "outputTokens": 50}
PRICES = Prices(input_per_mtok=2, cache_hit_per_mtok=0.5, output_per_mtok=8)
COST1 = (400 * 0.5 + 600 * 2 + 100 * 8) / 1e6
COST2 = (2000 * 2 + 50 * 8) / 1e6


def script(tmp_path: Path, turns: List[List[Dict[str, Any]]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"steps": steps} for steps in turns]}))
    return str(path)


TOOL_THEN_ANSWER = [[{"toolCalls": [{"id": "c1", "name": "run_tests", "arguments": {}}], "usage": STEP1},
                     {"text": "tests pass, and I saw your note", "usage": STEP2}]]


class Gate:
    """The client tool ``run_tests`` and what holds it: it returns only once ``hold_for``
    steers have been written to the bridge (counted by a spy on the connection's send)."""

    def __init__(self, hold_for: int = 1) -> None:
        self.tool_running = threading.Event()
        self.written: List[threading.Event] = [threading.Event() for _ in range(hold_for)]
        self._count = 0
        self._lock = threading.Lock()
        gate = self

        @tool
        def run_tests() -> str:
            """Runs the tests."""
            gate.tool_running.set()
            gate.written[-1].wait(GUARD)
            return "12 passed"

        self.tool = run_tests

    def spy_on(self, client: Any) -> None:
        send = client._send

        def spying(method: str, params: Any, *args: Any, **kwargs: Any) -> Any:
            pending = send(method, params, *args, **kwargs)
            if method == "session/steer":
                with self._lock:
                    if self._count < len(self.written):
                        self.written[self._count].set()
                    self._count += 1
            return pending

        client._send = spying


def sync_harness(tmp_path: Path, model: str, **kw: Any) -> DeepSeekHarness:
    return DeepSeekHarness(provider="scripted", model=model, cwd=tmp_path, bridge_bin=real_bridge_or_skip(),
                           session_root=tmp_path / "sessions", **kw)


def async_harness(tmp_path: Path, model: str, **kw: Any) -> AsyncDeepSeekHarness:
    return AsyncDeepSeekHarness(provider="scripted", model=model, cwd=tmp_path, bridge_bin=real_bridge_or_skip(),
                                session_root=tmp_path / "sessions", **kw)


def check_steered_turn(result: Any, answers: List[bool]) -> None:
    assert answers == [True, True]
    assert result.ok and result.final_response == "tests pass, and I saw your note"
    types = [e.type for e in result.events]
    after = types[types.index("tool/result"):]
    assert after == ["tool/result", "user/steer", "user/steer", "step/start", "assistant/message", "checkpoint", "turn/end"]
    steers = [e for e in result.events if e.type == "user/steer"]
    assert [s.data["content"][0]["text"] for s in steers] == ["also run the linter", "and the type checker"]


def test_steer_from_another_thread_while_run_waits(tmp_path: Path) -> None:
    gate = Gate(hold_for=2)
    with sync_harness(tmp_path, script(tmp_path, TOOL_THEN_ANSWER), tools=[gate.tool]) as h:
        gate.spy_on(h.client)
        session = h.start_session("s")
        answers: Dict[str, bool] = {}

        def steer() -> None:
            gate.tool_running.wait(GUARD)
            answers["first"] = session.steer("also run the linter")

        def steer_again() -> None:
            gate.written[0].wait(GUARD)  # after the first is on the wire: their order is known
            answers["second"] = session.steer([{"type": "text", "text": "and the type checker"}])

        threads = [threading.Thread(target=steer), threading.Thread(target=steer_again)]
        for t in threads:
            t.start()
        result = session.run("run the tests")
        for t in threads:
            t.join(GUARD)
    check_steered_turn(result, [answers.get("first", False), answers.get("second", False)])
    # One prompt, settled once: exactly one turn/end.
    assert [e.type for e in result.events].count("turn/end") == 1


def test_the_stream_types_user_steer(tmp_path: Path) -> None:
    gate = Gate()
    with sync_harness(tmp_path, script(tmp_path, [TOOL_THEN_ANSWER[0]]), tools=[gate.tool]) as h:
        gate.spy_on(h.client)
        session = h.start_session("s")
        answers: List[bool] = []

        def steer() -> None:
            gate.tool_running.wait(GUARD)
            answers.append(session.steer("also run the linter"))

        t = threading.Thread(target=steer)
        t.start()
        items = list(session.stream("run the tests"))
        t.join(GUARD)
        history = list(session.history())
    assert answers == [True]
    [steer_event] = [i for i in items if isinstance(i, UserSteer)]
    assert steer_event.text == "also run the linter" and steer_event.id.startswith("msg_")
    kinds = [type(i).__name__ for i in items if isinstance(i, (UserSteer, ToolResultEvent))]
    assert kinds == ["ToolResultEvent", "UserSteer"]
    # The history (the log) types it the same way.
    assert [e.text for e in history if isinstance(e, UserSteer)] == ["also run the linter"]


def test_steer_with_no_turn_in_flight_records_nothing(tmp_path: Path) -> None:
    with sync_harness(tmp_path, script(tmp_path, [[{"text": "hi"}]])) as h:
        assert h.steer("nobody", "hello?") is False
        session = h.start_session("idle")
        assert session.run("hi").ok
        before = len(list(session.history()))
        assert session.steer("anyone?") is False
        assert len(list(session.history())) == before
        assert [s.session_id for s in h.list_sessions()] == ["idle"]


def test_async_steer_from_another_task_while_run_awaits(tmp_path: Path) -> None:
    gate = Gate()

    async def main() -> Any:
        async with async_harness(tmp_path, script(tmp_path, TOOL_THEN_ANSWER), tools=[gate.tool], prices=PRICES) as h:
            gate.spy_on(h.client)
            session = h.start_session("s")
            loop = asyncio.get_running_loop()

            async def steer() -> bool:
                await loop.run_in_executor(None, gate.tool_running.wait, GUARD)
                return await session.steer("also run the linter")

            steering = asyncio.create_task(steer())
            result = await session.run("run the tests")
            steered = await steering
            idle = await session.steer("too late")
            return result, steered, idle, session.cost_usd

    result, steered, idle, total = run_async(main())
    assert steered is True and idle is False
    assert result.ok
    types = [e.type for e in result.events]
    assert types[types.index("tool/result"):] == ["tool/result", "user/steer", "step/start", "assistant/message", "checkpoint", "turn/end"]
    assert result.cost_usd == pytest.approx(COST1 + COST2, abs=1e-12)
    assert total == pytest.approx(COST1 + COST2, abs=1e-12)


def test_cost_per_turn_and_session_total(tmp_path: Path) -> None:
    turns = [[{"text": "one", "usage": STEP1}], [{"text": "two", "usage": STEP2}]]
    with sync_harness(tmp_path, script(tmp_path, turns), prices=PRICES) as h:
        session = h.start_session("s")
        first, second = session.run("first"), session.run("second")
    assert first.cost_usd == pytest.approx(COST1, abs=1e-12)
    assert second.cost_usd == pytest.approx(COST2, abs=1e-12)
    assert session.cost_usd == pytest.approx(COST1 + COST2, abs=1e-12)
    [message] = [e for e in first.events if e.type == "assistant/message"]
    assert message.data["usage"]["costUsd"] == pytest.approx(COST1, abs=1e-12)


def test_unknown_prices_mean_no_cost(tmp_path: Path) -> None:
    with sync_harness(tmp_path, script(tmp_path, [[{"text": "one", "usage": STEP1}]])) as h:
        session = h.start_session("s")
        result = session.run("first")
        assert result.ok and result.usage is not None
        assert result.cost_usd is None and session.cost_usd is None
        # A budget needs prices.
        with pytest.raises(InvalidParamsError) as caught:
            session.run("again", max_cost_usd=1.0)
        assert caught.value.kind == "no-prices"


@pytest.mark.parametrize("front", ["sync", "async"])
def test_max_cost_usd_ends_the_turn_budget(tmp_path: Path, front: str) -> None:
    model = script(tmp_path, TOOL_THEN_ANSWER)

    @tool
    def run_tests() -> str:
        """Runs the tests."""
        return "12 passed"

    if front == "sync":
        with sync_harness(tmp_path, model, tools=[run_tests], prices=PRICES) as h:
            result = h.run("run the tests", max_cost_usd=0.001)
    else:
        async def main() -> Any:
            async with async_harness(tmp_path, model, tools=[run_tests], prices=PRICES) as h:
                return await h.run("run the tests", max_cost_usd=0.001)

        result = run_async(main())
    assert result.status == "error" and result.reason.kind == "budget"
    assert result.reason.limit_usd == 0.001 and result.reason.cost_usd == pytest.approx(COST1, abs=1e-12)
    assert "budget" in result.reason.describe()
    assert result.cost_usd == pytest.approx(COST1, abs=1e-12)
    assert [e.type for e in result.events].count("step/start") == 1


@pytest.mark.parametrize("budget", [-1.0, 0, "1", None.__class__, [1]])
def test_a_bad_budget_is_refused_by_the_bridge(tmp_path: Path, budget: Any) -> None:
    budget = {} if budget is None.__class__ else budget
    with sync_harness(tmp_path, script(tmp_path, [[{"text": "one"}]]), prices=PRICES) as h:
        with pytest.raises(JsonRpcError) as caught:
            h.run("hi", max_cost_usd=budget)
        assert caught.value.code == -32602 and "params.maxCostUsd" in str(caught.value)
        assert h.run("still serving").ok


@pytest.mark.parametrize("budget", [float("nan"), float("inf")])
def test_a_budget_json_cannot_carry_is_a_value_error(tmp_path: Path, budget: float) -> None:
    with sync_harness(tmp_path, script(tmp_path, [[{"text": "one"}]]), prices=PRICES) as h:
        with pytest.raises(ValueError):
            h.run("hi", max_cost_usd=budget)
        assert h.run("still serving").ok


@pytest.mark.parametrize("prices", [{"inputPerMTok": -1, "outputPerMTok": 1}, {"inputPerMTok": 1}, {"inputPerMTok": "1", "outputPerMTok": 1}])
def test_bad_prices_are_refused_by_the_bridge(tmp_path: Path, prices: Any) -> None:
    h = sync_harness(tmp_path, script(tmp_path, [[{"text": "one"}]]), prices=prices)
    try:
        with pytest.raises(JsonRpcError) as caught:
            h.start()
        assert caught.value.code == -32602 and "params.prices" in str(caught.value)
    finally:
        h.close()


def test_the_low_level_client_steers_and_budgets(tmp_path: Path) -> None:
    from deepseek_harness import HarnessClient

    model = script(tmp_path, [[{"toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "x"}}], "usage": STEP1},
                               {"text": "done", "usage": STEP2}]])
    with HarnessClient(bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions") as client:
        client.initialize(tmp_path, "scripted", model, prices=PRICES)
        assert client.session_steer("s", "no turn yet") is False
        response = client.session_prompt("s", "go", max_cost_usd=0.001)
        assert response.status == "error" and response.reason.kind == "budget"
        assert response.reason.limit_usd == 0.001 and response.reason.cost_usd == pytest.approx(COST1, abs=1e-12)

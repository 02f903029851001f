"""``stream()`` takes ``run()``'s turn keywords: ``output_schema`` / ``output_type`` (the stream's
:class:`TurnResult` carries ``.output``), ``max_cost_usd`` (on the wire: the scripted turn ends
``budget``), with run()'s argument errors; and a streamed turn counts in the harness's per-session
cost (``session.cost_usd``) as a run() turn does. Both fronts, the harness's ``stream`` and the
session's, through the real binary (scripted model); the fake bridge's log shows that a bad
keyword sends nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

from deepseek_harness import (AsyncDeepSeekHarness, DeepSeekHarness, JsonRpcError, TurnEndEvent, TurnResult,
                              TurnStartEvent, tool)

from conftest import call_within, read_fake_log, real_bridge_or_skip, run_async
from test_structured_output import Verdict, final, script as structured_script
from test_turn_control import COST1, COST2, PRICES, STEP1, STEP2, TOOL_THEN_ANSWER, async_harness, script, sync_harness

NUMBERS = {"type": "array", "items": {"type": "integer"}}
# The model's first answer is not valid against NUMBERS; it fixes it on its second try.
NUMBERS_STEPS = (final({"value": ["one"]}), final({"value": [1, 2]}))
VERDICT_STEPS = (final({"answer": "yes", "confidence": 0.75}),)


def streamed(front: str, make: Any, where: str, prompt: str, **keywords: Any) -> List[Any]:
    """Every item of one streamed turn (``where``: the harness's ``stream`` or a session's)."""
    if front == "sync":
        with make() as h:
            stream = h.stream(prompt, **keywords) if where == "harness" else h.start_session("s").stream(prompt, **keywords)
            items: List[Any] = call_within(60, list, stream)
            assert stream.result is items[-1]
            return items

    async def main() -> List[Any]:
        async with make() as h:
            stream = h.stream(prompt, **keywords) if where == "harness" else h.start_session("s").stream(prompt, **keywords)
            items = [item async for item in stream]
            assert stream.result is items[-1]
            return items

    result: List[Any] = run_async(main())
    return result


def structured_harness(tmp_path: Path, front: str, *steps: Dict[str, Any]) -> Any:
    kind = DeepSeekHarness if front == "sync" else AsyncDeepSeekHarness
    return lambda: kind(provider="scripted", model=structured_script(tmp_path, *steps), cwd=tmp_path,
                        bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions")


@pytest.mark.parametrize("front", ["sync", "async"])
@pytest.mark.parametrize("where", ["harness", "session"])
def test_stream_with_output_type_gives_a_model_instance(tmp_path: Path, front: str, where: str) -> None:
    *events, last = streamed(front, structured_harness(tmp_path, front, *VERDICT_STEPS), where, "is it?",
                             output_type=Verdict)
    assert isinstance(last, TurnResult) and last.ok
    assert isinstance(last.output, Verdict) and last.output == Verdict(answer="yes", confidence=0.75)
    # The schema went out with the prompt: the turn started structured.
    [start] = [e for e in events if isinstance(e, TurnStartEvent)]
    assert start.output_schema == Verdict.model_json_schema()
    [end] = [e for e in events if isinstance(e, TurnEndEvent)]
    assert end.output == {"answer": "yes", "confidence": 0.75}


@pytest.mark.parametrize("front", ["sync", "async"])
@pytest.mark.parametrize("where", ["harness", "session"])
def test_stream_with_output_schema_gives_the_json_value(tmp_path: Path, front: str, where: str) -> None:
    *events, last = streamed(front, structured_harness(tmp_path, front, *NUMBERS_STEPS), where, "numbers",
                             output_schema=NUMBERS)
    assert last.ok and last.output == [1, 2]
    [start] = [e for e in events if isinstance(e, TurnStartEvent)]
    assert start.output_schema == NUMBERS


@pytest.fixture
def run_tests_tool() -> Any:
    @tool
    def run_tests() -> str:
        """Runs the tests."""
        return "12 passed"

    return run_tests


@pytest.mark.parametrize("front", ["sync", "async"])
@pytest.mark.parametrize("where", ["harness", "session"])
def test_stream_max_cost_usd_ends_the_turn_budget(tmp_path: Path, front: str, where: str, run_tests_tool: Any) -> None:
    # As test_turn_control's run() case: the first step costs COST1 > 0.001, so no second request.
    model = script(tmp_path, TOOL_THEN_ANSWER)
    make = sync_harness if front == "sync" else async_harness
    *events, result = streamed(front, lambda: make(tmp_path, model, tools=[run_tests_tool], prices=PRICES), where,
                               "run the tests", max_cost_usd=0.001)
    assert result.status == "error" and result.reason.kind == "budget"
    assert result.reason.limit_usd == 0.001 and result.reason.cost_usd == pytest.approx(COST1, abs=1e-12)
    assert result.cost_usd == pytest.approx(COST1, abs=1e-12)
    assert [e.type for e in result.events].count("step/start") == 1


@pytest.mark.parametrize("front", ["sync", "async"])
def test_streamed_turns_count_in_the_session_cost(tmp_path: Path, front: str) -> None:
    model = script(tmp_path, [[{"text": "one", "usage": STEP1}], [{"text": "two", "usage": STEP2}]])
    if front == "sync":
        with sync_harness(tmp_path, model, prices=PRICES) as h:
            session = h.start_session("s")
            *_, streamed_turn = call_within(60, list, session.stream("first"))
            after_stream = session.cost_usd
            ran = session.run("second")
            totals = (after_stream, session.cost_usd, h.session_cost_usd("s"))
    else:
        async def main() -> Any:
            async with async_harness(tmp_path, model, prices=PRICES) as h:
                session = h.start_session("s")
                async with session.stream("first") as stream:
                    items = [item async for item in stream]
                after_stream = session.cost_usd
                ran = await session.run("second")
                return items[-1], ran, (after_stream, session.cost_usd, h.session_cost_usd("s"))

        streamed_turn, ran, totals = run_async(main())
    assert streamed_turn.cost_usd == pytest.approx(COST1, abs=1e-12)
    assert ran.cost_usd == pytest.approx(COST2, abs=1e-12)
    assert totals[0] == pytest.approx(COST1, abs=1e-12)
    assert totals[1] == pytest.approx(COST1 + COST2, abs=1e-12)
    assert totals[2] == pytest.approx(COST1 + COST2, abs=1e-12)


BAD_OUTPUT_KEYWORDS = [
    ({"output_schema": {"type": "string"}, "output_type": Verdict}, "not both"),
    ({"output_schema": "string"}, "must be a dict"),
]


@pytest.mark.parametrize("front", ["sync", "async"])
@pytest.mark.parametrize("keywords,message", BAD_OUTPUT_KEYWORDS)
def test_bad_output_keywords_raise_as_run_does_and_send_nothing(fake: Any, fake_log: Path, front: str,
                                                                 keywords: Dict[str, Any], message: str) -> None:
    env = {"FAKE_BRIDGE_LOG": str(fake_log)}
    if front == "sync":
        with fake.harness({"turns": [{"steps": [{"text": "fine"}]}]}, env=env) as h:
            with pytest.raises(TypeError, match=message):
                h.run("?", **keywords)
            with pytest.raises(TypeError, match=message):
                h.stream("?", **keywords)
            with pytest.raises(TypeError, match=message):
                h.start_session("s").stream("?", **keywords)
            assert call_within(60, list, h.start_session("s").stream("ok"))[-1].final_response == "fine"
    else:
        async def main() -> str:
            async with fake.async_harness({"turns": [{"steps": [{"text": "fine"}]}]}, env=env) as h:
                with pytest.raises(TypeError, match=message):
                    await h.run("?", **keywords)
                with pytest.raises(TypeError, match=message):
                    h.stream("?", **keywords)
                with pytest.raises(TypeError, match=message):
                    h.start_session("s").stream("?", **keywords)
                items = [item async for item in h.start_session("s").stream("ok")]
                return str(items[-1].final_response)

        assert run_async(main()) == "fine"
    prompts = [f for f in read_fake_log(fake_log) if f.get("method") == "session/prompt"]
    assert len(prompts) == 1  # only the good stream's


@pytest.mark.parametrize("front", ["sync", "async"])
@pytest.mark.parametrize("budget,error", [(-1.0, JsonRpcError), ("1", JsonRpcError), (float("nan"), ValueError)])
def test_a_bad_budget_raises_from_the_stream_as_from_run(tmp_path: Path, front: str, budget: Any, error: type) -> None:
    model = script(tmp_path, [[{"text": "one"}]])
    if front == "sync":
        with sync_harness(tmp_path, model, prices=PRICES) as h:
            with pytest.raises(error) as from_run:
                h.run("hi", max_cost_usd=budget)
            with pytest.raises(error) as from_stream:
                call_within(60, list, h.start_session("s").stream("hi", max_cost_usd=budget))
            still = h.run("still serving")
    else:
        async def main() -> Any:
            async with async_harness(tmp_path, model, prices=PRICES) as h:
                with pytest.raises(error) as from_run:
                    await h.run("hi", max_cost_usd=budget)
                with pytest.raises(error) as from_stream:
                    async with h.stream("hi", max_cost_usd=budget) as stream:
                        [item async for item in stream]
                return from_run, from_stream, await h.run("still serving")

        from_run, from_stream, still = run_async(main())
    assert type(from_stream.value) is type(from_run.value)
    if isinstance(from_stream.value, JsonRpcError):
        assert from_stream.value.code == -32602 and "params.maxCostUsd" in str(from_stream.value)
    assert still.ok

"""A streamed turn counts in the harness's per-session cost (``session.cost_usd``,
``session_cost_usd``) as a run() turn does, on both fronts, through the real binary (scripted
model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import call_within, run_async
from test_turn_control import COST1, COST2, PRICES, STEP1, STEP2, async_harness, script, sync_harness


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

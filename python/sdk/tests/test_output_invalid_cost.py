"""A turn whose output the caller's ``output_type`` refuses (a validator stricter than the JSON
Schema the bridge checked) still ran and cost: the harness's per-session cost counts it, for
``run`` and for a stream, sync and async. The collector added the cost only after parsing the
output, so a refused output left the session's cost short by that turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError, field_validator

from conftest import call_within, run_async
from test_structured_output import final
from test_turn_control import COST1, PRICES, STEP1, async_harness, script, sync_harness


class Positive(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be positive")
        return value


def model(tmp_path: Path) -> str:
    return script(tmp_path, [[{**final({"n": -1}), "usage": STEP1}]])


@pytest.mark.parametrize("how", ["run", "stream"])
def test_sync_refused_output_still_counts(tmp_path: Path, how: str) -> None:
    with sync_harness(tmp_path, model(tmp_path), prices=PRICES) as h:
        with pytest.raises(ValidationError):
            if how == "run":
                call_within(60, h.run, "n?", "s", output_type=Positive)
            else:
                call_within(60, list, h.stream("n?", "s", output_type=Positive))
        assert h.session_cost_usd("s") == pytest.approx(COST1)


@pytest.mark.parametrize("how", ["run", "stream"])
def test_async_refused_output_still_counts(tmp_path: Path, how: str) -> None:
    async def main() -> Any:
        async with async_harness(tmp_path, model(tmp_path), prices=PRICES) as h:
            with pytest.raises(ValidationError):
                if how == "run":
                    await h.run("n?", "s", output_type=Positive)
                else:
                    async for _ in h.stream("n?", "s", output_type=Positive):
                        pass
            return h.session_cost_usd("s")

    assert run_async(main()) == pytest.approx(COST1)

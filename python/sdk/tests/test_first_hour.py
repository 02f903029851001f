"""What a new user's first hour with the SDK met, offline with the scripted model: each message
speaks of what the user made and the keyword to change, never of the SDK's insides or the wire."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from deepseek_harness import InvalidParamsError, Prices, TransportClosedError


def test_a_closed_harness_says_it_was_closed_and_to_make_a_new_one(real):
    with real.harness() as h:
        session = h.start_session()
        assert h.run("hi").status == "ok"
    for closed_use in (lambda: h.run("again"), lambda: session.run("again")):
        # Still a TransportClosedError: `except TransportClosedError` keeps working.
        with pytest.raises(TransportClosedError) as caught:
            closed_use()
        assert str(caught.value).startswith("this DeepSeekHarness was closed; create a new DeepSeekHarness")
        assert "client" not in str(caught.value)


def test_a_harness_closed_before_it_started_says_so_too(real):
    h = real.harness()
    h.close()
    with pytest.raises(TransportClosedError, match="^this DeepSeekHarness was closed; create a new DeepSeekHarness"):
        h.run("hi")


def test_a_closed_async_harness_names_itself(real):
    async def main() -> str:
        async with real.async_harness() as h:
            assert (await h.run("hi")).status == "ok"
        with pytest.raises(TransportClosedError) as caught:
            await h.run("again")
        return str(caught.value)

    message = asyncio.run(main())
    assert message.startswith("this AsyncDeepSeekHarness was closed; create a new AsyncDeepSeekHarness")


class Answer(BaseModel):
    city: str


def test_a_model_class_given_as_output_schema_points_to_output_type(fake):
    h = fake.harness()
    with pytest.raises(TypeError) as caught:
        h.run("hi", output_schema=Answer)  # type: ignore[arg-type]
    assert "pass a pydantic model as output_type= (output_type=Answer)" in str(caught.value)
    with pytest.raises(TypeError) as caught:
        h.run("hi", output_schema=["not", "a", "schema"])  # type: ignore[arg-type]
    assert "output_type" not in str(caught.value)  # a value that is no class: no such hint


def test_a_budget_without_prices_names_the_prices_keyword(real):
    h = real.harness()
    with pytest.raises(InvalidParamsError) as caught:
        h.run("hi", max_cost_usd=0.5)
    assert "give initialize.prices (prices= in the Python SDK) to set a budget" in str(caught.value)


def test_a_negative_budget_gets_one_message(real):
    h = real.harness(prices=Prices(input_per_mtok=1.0, output_per_mtok=2.0))
    with pytest.raises(InvalidParamsError) as caught:
        h.run("hi", max_cost_usd=-1)
    assert str(caught.value).endswith("params.maxCostUsd: a budget must be more than 0 (US dollars)")

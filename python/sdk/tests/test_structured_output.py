"""Structured output through the real binary (scripted model): ``run(..., output_schema=dict)``
and ``run(..., output_type=Model)`` give :attr:`TurnResult.output`, on both fronts; a value the
model fixes on its second try, one it never gets right (``output-invalid``), a bad schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from pydantic import BaseModel

from deepseek_harness import (AsyncDeepSeekHarness, DeepSeekHarness, JsonRpcError, OutputReminderEvent, TurnStartEvent,
                              event_from_notification)

from conftest import real_bridge_or_skip, run_async


class Verdict(BaseModel):
    answer: str
    confidence: float


def final(args: Dict[str, Any]) -> Dict[str, Any]:
    return {"toolCalls": [{"name": "final_answer", "arguments": args}]}


def script(tmp_path: Path, *steps: Dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"steps": list(steps)}]}))
    return str(path)


def harness(tmp_path: Path, *steps: Dict[str, Any]) -> DeepSeekHarness:
    return DeepSeekHarness(provider="scripted", model=script(tmp_path, *steps), cwd=tmp_path,
                           bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions")


def test_output_type_gives_a_model_instance(tmp_path: Path) -> None:
    with harness(tmp_path, final({"answer": "yes", "confidence": 0.75})) as h:
        result = h.run("is it?", output_type=Verdict)
    assert result.ok
    assert result.output == Verdict(answer="yes", confidence=0.75)
    assert isinstance(result.output, Verdict)
    turn_start = next(ev for ev in result.events if ev.type == "turn/start")
    assert turn_start.data["outputSchema"] == Verdict.model_json_schema()


def test_output_schema_gives_the_json_value_after_a_second_try(tmp_path: Path) -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    with harness(tmp_path, final({"value": ["one"]}), final({"value": [1, 2]})) as h:
        result = h.start_session("s1").run("numbers", output_schema=schema)
    assert result.ok
    assert result.output == [1, 2]
    errors = [ev for ev in result.events if ev.type == "tool/result" and ev.data["isError"]]
    assert len(errors) == 1 and "must be integer" in errors[0].data["content"][0]["text"]


def test_a_value_never_valid_ends_output_invalid(tmp_path: Path) -> None:
    with harness(tmp_path, {"text": "plain"}, final({"answer": 1}), final({"answer": 2})) as h:
        result = h.run("is it?", output_type=Verdict)
    assert result.status == "error"
    assert result.reason.kind == "output-invalid"
    assert "after 3 attempts" in (result.reason.message or "")
    assert result.output is None


def test_a_plain_text_answer_is_a_typed_output_reminder_event(tmp_path: Path) -> None:
    with harness(tmp_path, {"text": "plain"}, final({"answer": "y", "confidence": 1})) as h:
        result = h.run("is it?", output_type=Verdict)
    assert result.ok
    typed = [event_from_notification(n) for n in result.notifications]
    reminders = [ev for ev in typed if isinstance(ev, OutputReminderEvent)]
    assert len(reminders) == 1 and (reminders[0].turn, reminders[0].attempt) == (1, 1)
    assert "final_answer" in reminders[0].text
    start = next(ev for ev in typed if isinstance(ev, TurnStartEvent))
    assert start.output_schema == Verdict.model_json_schema()


def test_a_bad_schema_is_the_requests_error_naming_the_field(tmp_path: Path) -> None:
    with harness(tmp_path, final({"answer": "x", "confidence": 1})) as h:
        with pytest.raises(JsonRpcError) as caught:
            h.run("?", output_schema={"type": "no-such-type"})
        assert caught.value.code == -32602
        assert "params.outputSchema" in str(caught.value)
        with pytest.raises(TypeError):
            h.run("?", output_schema={"type": "string"}, output_type=Verdict)
        assert h.run("?", output_type=Verdict).output == Verdict(answer="x", confidence=1)


def test_the_async_front_parses_output_type_too(tmp_path: Path) -> None:
    async def main() -> List[Any]:
        async with AsyncDeepSeekHarness(provider="scripted", model=script(tmp_path, final({"value": 7})), cwd=tmp_path,
                                        bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions") as h:
            r = await h.run("seven", output_type=int)
            return [r.status, r.output]
    assert run_async(main()) == ["ok", 7]

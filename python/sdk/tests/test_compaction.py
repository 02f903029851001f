"""Compaction through the real binary (scripted model): a session whose reported usage passes
``compact_at`` of its window compacts, keeps going and resumes after a restart; ``compact()``
on demand, on both fronts; a busy session's compact is the -32001 error."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

from deepseek_harness import AsyncDeepSeekHarness, ContextCompactedEvent, DeepSeekHarness, TextDeltaEvent

from conftest import real_bridge_or_skip, run_async

SCRIPT: Dict[str, Any] = {
    "turns": [
        {"steps": [{"text": "first", "usage": {"inputTokens": 9000, "outputTokens": 5}}]},
        {"steps": [{"text": "second", "usage": {"inputTokens": 1000, "outputTokens": 5}}]},
        {"steps": [{"text": "third"}]},
    ],
    "compaction": {"steps": [{"text": "SUMMARY: a long first prompt"}]},
}


#: A first prompt longer than the summary that replaces it (a shorter one is not worth compacting).
LONG_HELLO = "hello; my notes: " + "the build is green. " * 20


def harness(tmp_path: Path, **kw: Any) -> DeepSeekHarness:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    return DeepSeekHarness(provider="scripted", model=str(script), cwd=tmp_path, bridge_bin=real_bridge_or_skip(),
                           session_root=tmp_path / "sessions", **kw)


def compacted(events: List[Any]) -> List[Any]:
    return [ev for ev in events if ev.type == "context/compacted"]


def test_compaction_keeps_going_and_resumes_after_a_restart(tmp_path: Path) -> None:
    with harness(tmp_path, context_window=10_000) as h:
        s = h.start_session("s")
        assert s.run("x" * 20_000).ok
        second = s.run("go on")
        assert second.ok and second.final_response == "second"
        [event] = compacted(second.events)
        assert event.data["summary"] == "SUMMARY: a long first prompt"
        assert event.data["trigger"] == "auto"
    with harness(tmp_path, context_window=10_000) as h:
        third = h.start_session("s").run("and now")
        # The typed event stream and the typed history carry the compaction.
        history = list(h.session("s").history())
    assert third.ok and third.final_response == "third"
    assert third.usage is not None and third.usage.input_tokens < 500
    [typed] = [ev for ev in history if isinstance(ev, ContextCompactedEvent)]
    assert (typed.summary, typed.trigger, typed.turn) == ("SUMMARY: a long first prompt", "auto", 2)
    assert typed.tokens_after < typed.tokens_before and typed.kept_from_seq == event.data["keptFromSeq"]


def test_compaction_is_a_typed_stream_event(tmp_path: Path) -> None:
    with harness(tmp_path, context_window=10_000) as h:
        s = h.start_session("s")
        s.run("x" * 20_000)
        events = list(s.stream("go on"))
    [typed] = [ev for ev in events if isinstance(ev, ContextCompactedEvent)]
    assert typed.summary == "SUMMARY: a long first prompt" and typed.session_id == "s"
    # Recorded before the step it made room for.
    assert events.index(typed) < next(i for i, ev in enumerate(events) if isinstance(ev, TextDeltaEvent))


def test_compact_on_demand(tmp_path: Path) -> None:
    with harness(tmp_path) as h:
        s = h.start_session("s")
        s.run(LONG_HELLO)
        assert s.compact() is True
        assert s.compact() is False
        assert h.start_session("unknown").compact() is False


def test_async_compact(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))

    async def main() -> List[bool]:
        async with AsyncDeepSeekHarness(provider="scripted", model=str(script), cwd=tmp_path,
                                        bridge_bin=real_bridge_or_skip(), session_root=tmp_path / "sessions") as h:
            s = h.start_session("a")
            await s.run(LONG_HELLO)
            return [await s.compact(), await s.compact()]
    assert run_async(main()) == [True, False]


def summarize_instruction() -> str:
    """The bridge's SUMMARIZE_INSTRUCTION, read from the source it was built from (its string pieces joined)."""
    from conftest import REPO_ROOT
    source = (REPO_ROOT / "src" / "agent" / "compaction.ts").read_text(encoding="utf-8")
    start = source.index("export const SUMMARIZE_INSTRUCTION =")
    body = source[start:source.index(";\n", start)]
    return "".join(json.loads(piece) for piece in re.findall(r'"(?:[^"\\]|\\.)*"', body))


def test_a_context_window_refusal_compacts_and_retries_through_the_sdk(tmp_path: Path) -> None:
    # The Python fake DeepSeek refuses a request past its window with DeepSeek's 400 and words.
    import sys
    from conftest import REPO_ROOT, call_within
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    from fake_deepseek import FakeDeepSeek, request_tokens

    def say(text: str) -> Dict[str, Any]:
        return {"events": [{"delta": {"role": "assistant", "content": text}}, {"delta": {}, "finish_reason": "stop"}]}

    first, second = "First. " + "a" * 6_000, "Second. " + "b" * 6_000
    with FakeDeepSeek() as server:
        # The summarizing request's user message is the first prompt with the bridge's instruction appended.
        server.table = {first: [say("noted")], f"{first}\n{summarize_instruction()}": [say("SUMMARY: a long text of a's")],
                        second: [say("answered after the compaction")]}
        env = {"DEEPSEEK_API_KEY": "sk-test-not-a-real-key", "DEEPSEEK_BASE_URL": server.base_url,
               "HARNESS_MAX_RETRIES": "0", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        with DeepSeekHarness(provider="deepseek", cwd=tmp_path, bridge_bin=real_bridge_or_skip(), env=env,
                             session_root=tmp_path / "sessions", thinking="disabled") as h:
            s = h.start_session("s")
            assert call_within(30, s.run, first).ok
            # Both long prompts no longer fit; the summary in place of the first does.
            server.context_window = request_tokens(server.requests[0]["body"])["messages"] + 1_000
            result = call_within(30, s.run, second)
    assert result.ok and result.final_response == "answered after the compaction", result
    assert server.context_refusals == 1 and server.problems == []
    [event] = [ev for ev in result.events if ev.type == "context/compacted"]
    assert (event.data["trigger"], event.data["summary"]) == ("refused", "SUMMARY: a long text of a's")
    retry = server.requests[-1]["body"]
    assert not any(m.get("content") == first for m in retry["messages"])
    assert server.requests[-2]["body"]["tool_choice"] == "none"

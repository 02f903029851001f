"""DeepSeekHarness / Session / TurnResult."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from deepseek_harness import DeepSeekHarness, Notification, SessionEvent, TurnResult, Usage
from deepseek_harness.api import final_response_of, usage_of

from conftest import SUBAGENT_SCRIPT, call_within

TWO_TURNS = {
    "turns": [
        {"steps": [
            {"reasoning": "hmm", "text": "first, a tool", "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "README.md"}}],
             "usage": {"inputTokens": 100, "outputTokens": 10}},
            {"text": "Hello ", "usage": {"inputTokens": 120, "outputTokens": 5}},
        ]},
        {"steps": [{"text": "second turn answer", "usage": {"inputTokens": 7, "outputTokens": 3}}]},
    ]
}


def test_run_builds_the_turn_result(backend):
    with backend.harness(TWO_TURNS) as h:
        seen = []
        r = call_within(60, h.run, "hello", on_notification=seen.append)
    assert isinstance(r, TurnResult)
    assert (r.status, r.reason.kind, r.ok) == ("ok", "completed", True)
    assert re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", r.session_id)
    assert r.final_response == "Hello "
    types = [e.type for e in r.events]
    assert all(isinstance(e, SessionEvent) for e in r.events)
    assert "assistant/chunk" not in types
    assert types[0] == "user/message" and types[-1] == "turn/end"
    assert types.count("assistant/message") == 2 and "tool/result" in types
    assert r.usage == Usage(input_tokens=220, output_tokens=15) or (
        r.usage.input_tokens == 220 and r.usage.output_tokens == 15)
    # notifications: every one, chunks included, in the order the callback saw them
    assert r.notifications == seen
    assert any(n.event_type == "assistant/chunk" for n in r.notifications)


def test_run_without_a_callback_keeps_the_same_notifications(backend):
    """Without a callback, run() keeps chunks undecoded (cheaper for the GC); the result must
    hold the same notifications as when a callback watches the turn."""
    def comparable(notifications):
        out = []
        for n in notifications:
            p = dict(n.payload)
            if "event" in p:  # what differs from turn to turn: times, durations, random message ids
                event = {k: v for k, v in p["event"].items() if k != "time"}
                event["data"] = {k: v for k, v in event["data"].items() if k not in ("id", "durationMs")}
                p["event"] = event
            out.append((n.method, p))
        return out

    with backend.harness(TWO_TURNS) as h:
        seen = []
        watched = call_within(60, h.run, "hello", session_id="watched", on_notification=seen.append)
        kept = call_within(60, h.run, "hello", session_id="kept")
    assert any(n.event_type == "assistant/chunk" for n in kept.notifications)
    as_watched = [(m, {**p, "sessionId": "watched"} if p.get("sessionId") == "kept" else p)
                  for m, p in comparable(kept.notifications)]
    assert as_watched == comparable(watched.notifications) == comparable(seen)
    assert [e.type for e in kept.events] == [e.type for e in watched.events]
    assert kept.final_response == watched.final_response == "Hello "
    chunk = next(n for n in kept.notifications if n.event_type == "assistant/chunk")
    assert chunk.event.data["chunk"]["type"] in ("text-delta", "reasoning-delta")


def test_session_continues_across_turns(backend):
    with backend.harness(TWO_TURNS) as h:
        s = h.start_session()
        first = call_within(60, s.run, "one")
        second = call_within(60, s.run, "two")
        assert first.session_id == second.session_id == s.session_id == s.id
        assert first.final_response == "Hello "
        assert second.final_response == "second turn answer"
        assert second.events[0].type == "user/message"
        assert second.events[0].seq > first.events[-1].seq
        assert second.usage.input_tokens == 7
        named = h.start_session("my-session.1")
        assert call_within(60, named.run, "x").session_id == "my-session.1"


def test_error_and_aborted_turns(backend):
    script = {"turns": [
        {"steps": [{"text": "partial", "error": {"message": "rate limited", "httpStatus": 429, "code": "rate_limit"}}]},
        {"steps": [{"text": "waiting", "hang": True}]},
    ]}
    with backend.harness(script) as h:
        s = h.start_session()
        r = call_within(60, s.run, "go")
        assert (r.status, r.reason.kind) == ("error", "model-error")
        assert r.reason.message and "rate limited" in r.reason.message and r.reason.http_status == 429

        started = threading.Event()
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("r", s.run("hang", on_notification=lambda n: started.set())))
        t.start()
        assert started.wait(30)
        assert call_within(30, s.cancel) is True
        t.join(30)
        assert (box["r"].status, box["r"].reason.kind) == ("aborted", "aborted")
        assert box["r"].events[-1].type == "turn/end"


def test_subagent_notifications_are_collected(backend):
    with backend.harness(SUBAGENT_SCRIPT) as h:
        r = call_within(60, h.run, "delegate", session_id="root")
    assert r.status == "ok"
    assert r.final_response == "parent done"
    methods = {n.method for n in r.notifications}
    assert {"subagent.started", "subagent.finished", "session.event"} <= methods
    assert any(n.method == "session.event" and n.payload["sessionId"] != "root" for n in r.notifications)
    assert all(e for e in r.events)  # only this session's events
    assert {n.payload["sessionId"] for n in r.notifications if n.method == "session.event"} - {"root"}


def test_context_manager_starts_and_closes(backend):
    h = backend.harness()
    assert not h.client.started
    with h:
        assert h.client.started and h.initialize_response.protocol_version == 1
        proc = h.client.process
        assert call_within(60, h.run, "hi").status == "ok"
    assert proc.returncode == 0 and h.client.closed
    h.close()  # idempotent


def test_run_starts_lazily(backend):
    h = backend.harness()
    try:
        assert call_within(60, h.run, "hi").ok
    finally:
        h.close()


def test_final_response_and_usage_helpers():
    def ev(seq, type_, data):
        return SessionEvent(type=type_, seq=seq, time=0, data=data)

    events = [
        ev(1, "assistant/message", {"content": [{"type": "text", "text": "a"}], "usage": {"inputTokens": 1, "outputTokens": 2}}),
        ev(2, "assistant/message", {"content": [{"type": "reasoning", "text": "r"}, {"type": "text", "text": "b"},
                                                {"type": "tool-call", "id": "x", "name": "glob", "arguments": {}},
                                                {"type": "text", "text": "c"}],
                                    "usage": {"inputTokens": 3, "outputTokens": 4, "reasoningTokens": 1}}),
    ]
    assert final_response_of(events) == "bc"
    assert final_response_of([]) == ""
    u = usage_of(events)
    assert (u.input_tokens, u.output_tokens, u.reasoning_tokens) == (4, 6, 1)
    assert usage_of(events + [ev(3, "turn/end", {"reason": {"kind": "completed"}, "usage": {"inputTokens": 9, "outputTokens": 9}})]).input_tokens == 9
    assert usage_of([]) is None


def test_notification_is_lazy():
    n = Notification("session.event", {"sessionId": "s", "event": {"type": "turn/start", "seq": "not-an-int", "time": 0, "data": {}}})
    assert n.session_id == "s" and n.event_type == "turn/start"  # no validation yet
    with pytest.raises(ValueError):
        n.event


def test_initialize_response_says_what_confines_bash(real):
    """The bridge reports its bash sandbox; the SDK types it (``SandboxStatus``)."""
    from deepseek_harness import SandboxStatus

    with real.harness() as h:
        sandbox = h.initialize_response.sandbox
        assert isinstance(sandbox, SandboxStatus)
        # bubblewrap where it is installed (CI), else the Landlock confinement (bubblewrap is optional).
        bwrap = os.environ.get("HARNESS_BWRAP") != "off" and any(
            os.access(p, os.X_OK) for p in ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"))
        assert sandbox.bash == ("bubblewrap" if bwrap else "landlock") and sandbox.reason is None
    with real.harness(permission_mode="full") as h:
        sandbox = h.initialize_response.sandbox
        assert sandbox.bash == "none" and "full" in (sandbox.reason or "")


@pytest.mark.parametrize("prompt,hint", [
    (Path("README.md"), "read it: Path(...).read_text()"),
    (b"bytes", "not bytes"),
    ({"type": "text", "text": "one block"}, "a single block goes in a list"),
    (42, "not int"),
], ids=["path", "bytes", "one-block", "int"])
def test_a_prompt_that_is_not_a_str_or_blocks_is_a_clear_type_error(fake, prompt, hint):
    """``h.run(Path("README.md"))`` raised "'PosixPath' object is not iterable" from inside the SDK."""
    h = fake.harness()
    with pytest.raises(TypeError, match="the prompt must be a str or a list of text blocks") as info:
        call_within(30, h.run, prompt)
    assert hint in str(info.value)
    assert h.client._router.pending == {}
    assert call_within(30, h.run, "fine").ok

"""Session.stream (blocking) and the typed event models: what a stream yields, in what order,
and that closing it early cancels the turn and leaves the session usable."""

from __future__ import annotations

import pytest

from deepseek_harness import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    BaseSessionEvent,
    Notification,
    ReasoningDeltaEvent,
    RequestTimeoutError,
    StepStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDeltaEvent,
    ToolCallBlock,
    ToolCallDeltaEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEvent,
    TurnResult,
    TurnStartEvent,
    TurnStream,
    UnknownEvent,
    UserMessageEvent,
    event_from_notification,
)

from conftest import SUBAGENT_SCRIPT, call_within, read_fake_log

TOOL_TURN = {
    "turns": [
        {"steps": [
            {"reasoning": "I should read it.", "text": "Reading the README.", "chunkSize": 5,
             "toolCalls": [{"id": "call-1", "name": "read_file", "arguments": {"path": "README.md"}}],
             "usage": {"inputTokens": 11, "outputTokens": 7}},
            {"text": "It greets you.", "chunkSize": 4, "usage": {"inputTokens": 13, "outputTokens": 3}},
        ]},
    ]
}
# Turn 0 streams a little and hangs until cancelled; turn 1 answers "done".
HANG_THEN_DONE = {"turns": [{"steps": [{"text": "working on it", "chunkSize": 4, "hang": True}]},
                            {"steps": [{"text": "done"}]}]}


def aborted_turn_ends(sub):
    """The turn/end events with reason ``aborted`` a session subscription has received."""
    return [n for n in sub.drain()
            if n.event_type == "turn/end" and n.payload["event"]["data"]["reason"]["kind"] == "aborted"]


def test_stream_of_a_tool_turn(backend):
    with backend.harness(TOOL_TURN) as h:
        stream = h.start_session().stream("what is in the README?")
        assert isinstance(stream, TurnStream) and stream.result is None
        items = call_within(60, list, stream)

    *events, last = items
    # The TurnResult is the last item, and the same object as .result.
    assert isinstance(last, TurnResult) and last is stream.result
    assert (last.status, last.reason.kind, last.final_response) == ("ok", "completed", "It greets you.")
    assert (last.usage.input_tokens, last.usage.output_tokens) == (24, 10)
    assert all(isinstance(e, TurnEvent) and not isinstance(e, UnknownEvent) for e in events)
    # One typed event per notification of the turn, in the same order.
    assert len(events) == len(last.notifications)
    assert [e.seq for e in events] == [n.payload["event"]["seq"] for n in last.notifications]
    assert all(e.session_id == last.session_id for e in events)
    assert [e.seq for e in events] == sorted(set(e.seq for e in events))

    assert isinstance(events[0], UserMessageEvent) and events[0].text == "what is in the README?"
    assert isinstance(events[1], TurnStartEvent) and isinstance(events[2], StepStartEvent)
    assert isinstance(events[-1], TurnEndEvent) and events[-1].reason.kind == "completed"
    assert events[-1].usage.input_tokens == 24

    # Deltas, typed by kind; their concatenation is the message they make up.
    messages = [e for e in events if isinstance(e, AssistantMessageEvent)]
    assert len(messages) == 2
    first_step = [e for e in events if isinstance(e, AssistantChunkEvent) and e.step == messages[0].step]
    assert "".join(e.text for e in first_step if isinstance(e, ReasoningDeltaEvent)) == "I should read it."
    assert "".join(e.text for e in first_step if isinstance(e, TextDeltaEvent)) == "Reading the README."
    assert all(e.type == "assistant/chunk" for e in first_step)
    deltas = [e for e in first_step if isinstance(e, ToolCallDeltaEvent)]
    assert deltas and deltas[0].chunk.name == "read_file" and deltas[0].chunk.id == "call-1"

    # The tool call (complete, in the assistant message), then its result.
    assert messages[0].finish_reason == "tool-calls" and messages[0].text == "Reading the README."
    assert messages[0].reasoning == "I should read it."
    (call,) = messages[0].tool_calls
    assert isinstance(call, ToolCallBlock) and (call.id, call.name, call.arguments) == ("call-1", "read_file", {"path": "README.md"})
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert (result.call_id, result.name, result.is_error) == ("call-1", "read_file", False)
    assert "Hello from the README." in result.text
    assert events.index(messages[0]) < events.index(result) < events.index(messages[1])
    assert messages[1].text == "It greets you." and messages[1].usage.output_tokens == 3


def test_stream_of_a_subagent_turn(backend):
    with backend.harness(SUBAGENT_SCRIPT) as h:
        stream = h.stream("delegate", session_id="root")
        items = call_within(60, list, stream)
    *events, last = items
    assert last is stream.result and last.status == "ok" and last.final_response == "parent done"

    (started,) = [e for e in events if isinstance(e, SubagentStartedEvent)]
    (finished,) = [e for e in events if isinstance(e, SubagentFinishedEvent)]
    child = started.child_session_id
    assert started.parent_session_id == started.session_id == "root" and child != "root"
    assert (finished.child_session_id, finished.agent_id, finished.status) == (child, child, "ok")
    assert finished.stop_reason.kind == "completed" and finished.text
    child_events = [e for e in events if isinstance(e, BaseSessionEvent) and e.session_id == child]
    assert child_events and isinstance(child_events[0], UserMessageEvent)
    assert "".join(e.text for e in child_events if isinstance(e, TextDeltaEvent)) == "child says hi"
    # started → the child's events → finished → the parent's tool/result for the task call.
    (task_result,) = [e for e in events if isinstance(e, ToolResultEvent) and e.session_id == "root"]
    assert task_result.name == "task" and not task_result.is_error
    assert (events.index(started) < events.index(child_events[0]) < events.index(child_events[-1])
            < events.index(finished) < events.index(task_result))
    # The durable events of the result are the root session's only.
    assert {e.type for e in last.events} >= {"user/message", "tool/result", "turn/end"}
    assert len(last.events) == len([e for e in events if isinstance(e, BaseSessionEvent)
                                    and e.session_id == "root" and e.type != "assistant/chunk"])


def test_events_arrive_while_the_turn_is_in_flight(backend):
    """The stream is live: the first delta is yielded while the turn is still running (it
    hangs until cancelled), not when the turn has settled."""
    with backend.harness(HANG_THEN_DONE) as h:
        s = h.start_session()
        with s.stream("hang") as stream:
            first_delta = call_within(60, lambda: next(e for e in stream if isinstance(e, TextDeltaEvent)))
            assert first_delta.text == "work"
            assert stream.result is None
            # Still in flight: the bridge has a turn to cancel.
            assert call_within(30, s.cancel) is True
            rest = call_within(30, list, stream)
        assert rest[-1] is stream.result and stream.result.status == "aborted"
        assert isinstance(rest[-2], TurnEndEvent) and rest[-2].reason.kind == "aborted"


@pytest.mark.parametrize("how", ["break", "close", "with"])
def test_closing_a_stream_early_cancels_the_turn(backend, how):
    with backend.harness(HANG_THEN_DONE) as h:
        s = h.start_session()
        sub = h.client.subscribe_session_notifications(s.id)

        def consume():
            if how == "break":
                for ev in s.stream("hang"):
                    if isinstance(ev, TextDeltaEvent):
                        break
                # nobody holds the stream: it was closed when the loop let go of it
            elif how == "close":
                stream = s.stream("hang")
                while not isinstance(next(stream), TextDeltaEvent):
                    pass
                stream.close()
                stream.close()  # idempotent
                assert list(stream) == [] and stream.result is None
            else:
                with s.stream("hang") as stream:
                    while not isinstance(next(stream), TextDeltaEvent):
                        pass

        call_within(60, consume)
        # The turn was aborted, and had settled before the stream's close returned.
        assert len(aborted_turn_ends(sub)) == 1
        sub.close()
        r = call_within(60, s.run, "again")
        assert (r.status, r.final_response) == ("ok", "done")


def test_closing_early_sends_cancel_once(fake, fake_log):
    h = fake.harness(HANG_THEN_DONE, env={"FAKE_BRIDGE_LOG": str(fake_log)})
    with h:
        s = h.start_session()
        stream = s.stream("hang")
        call_within(60, lambda: next(e for e in stream if isinstance(e, TextDeltaEvent)))
        call_within(60, stream.close)
        assert call_within(60, s.run, "again").final_response == "done"
    methods = [(f.get("method"), f.get("sessionId")) for f in read_fake_log(fake_log) if "method" in f]
    assert methods.count(("session/cancel", s.id)) == 1
    assert methods.count(("session/prompt", s.id)) == 2


def test_a_finished_or_unstarted_stream_sends_nothing(fake, fake_log):
    h = fake.harness(TOOL_TURN, env={"FAKE_BRIDGE_LOG": str(fake_log)})
    with h:
        s = h.start_session()
        unstarted = s.stream("never sent")
        unstarted.close()
        assert list(unstarted) == []
        done = s.stream("hi")
        items = call_within(60, list, done)
        done.close()  # after the end: no cancel
        assert done.result is items[-1]
    methods = [f.get("method") for f in read_fake_log(fake_log) if "method" in f]
    assert methods.count("session/prompt") == 1 and "session/cancel" not in methods


def test_stream_timeout_cancels_and_the_session_stays_usable(fake):
    # request_timeout_seconds bounds every request, initialize too: 5 s leaves a fake bridge
    # starting on a busy machine time to answer initialize (1 s did not, under load 10-17).
    with fake.harness(HANG_THEN_DONE, request_timeout_seconds=5.0) as h:
        s = h.start_session()
        stream = s.stream("hang")
        with pytest.raises(RequestTimeoutError):
            call_within(60, list, stream)
        assert stream.result is None and list(stream) == []
        assert call_within(60, s.run, "again").final_response == "done"


def test_unknown_events_pass_through(fake):
    """What a newer bridge might send reaches the stream untouched, between typed events."""
    with fake.harness(TOOL_TURN, env={"FAKE_BRIDGE_MODE": "unknown-events"}) as h:
        stream = h.stream("hi")
        *events, last = call_within(60, list, stream)
    assert last.status == "ok"
    unknown = [e for e in events if isinstance(e, UnknownEvent)]
    assert [(u.method, u.type) for u in unknown] == [("session.event", "plan/update"), ("session.metrics", None)]
    # The params are the notification's own dict, untouched.
    by_identity = {id(n.payload): n for n in last.notifications}
    for u in unknown:
        assert by_identity[id(u.params)].method == u.method
        assert u.session_id == last.session_id
    assert unknown[0].params["event"]["data"] == {"items": [{"step": "read", "done": True}]}
    assert unknown[1].params == {"sessionId": last.session_id, "tokensPerSecond": 12.5}
    # An unknown chunk kind is still an assistant/chunk, with its chunk kept as a dict.
    (odd,) = [e for e in events if type(e) is AssistantChunkEvent]
    assert odd.chunk == {"type": "citation-delta", "url": "https://example.com"}
    assert isinstance(events[-1], TurnEndEvent)


def test_event_models_map_the_wire_names():
    def se(type_, data, sid="s1"):
        return Notification("session.event", {"sessionId": sid, "event": {"type": type_, "seq": 7, "time": 99, "data": data}})

    msg = event_from_notification(se("assistant/message", {
        "id": "m1", "turn": 2, "step": 1, "finishReason": "tool-calls",
        "content": [{"type": "reasoning", "text": "r"}, {"type": "text", "text": "a"},
                    {"type": "tool-call", "id": "c9", "name": "grep", "arguments": {}, "rawArguments": "{bad"},
                    {"type": "image", "url": "u"}],
        "usage": {"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 3, "cacheHitTokens": 4}}))
    assert isinstance(msg, AssistantMessageEvent)
    assert (msg.session_id, msg.seq, msg.time, msg.turn, msg.step) == ("s1", 7, 99, 2, 1)
    assert msg.tool_calls[0].raw_arguments == "{bad" and msg.content[-1] == {"type": "image", "url": "u"}
    assert (msg.usage.reasoning_tokens, msg.usage.cache_hit_tokens) == (3, 4)
    res = event_from_notification(se("tool/result", {"callId": "c9", "name": "grep", "isError": True, "durationMs": 12,
                                                     "content": [{"type": "text", "text": "no match"}]}))
    assert isinstance(res, ToolResultEvent) and (res.call_id, res.is_error, res.duration_ms, res.text) == ("c9", True, 12, "no match")
    end = event_from_notification(se("turn/end", {"turn": 2, "reason": {"kind": "model-error", "message": "m", "httpStatus": 500}}))
    assert isinstance(end, TurnEndEvent) and end.reason.http_status == 500 and end.usage is None
    tcd = event_from_notification(se("assistant/chunk", {"turn": 2, "step": 1, "chunk": {"type": "tool-call-delta", "index": 0, "argumentsDelta": "{\"a"}}))
    assert isinstance(tcd, ToolCallDeltaEvent) and tcd.chunk.arguments_delta == "{\"a" and tcd.chunk.name is None
    fin = event_from_notification(Notification("subagent.finished", {
        "provider": "scripted", "agentId": "c", "parentSessionId": "p", "childSessionId": "c", "status": "error",
        "stopReason": {"kind": "max-steps", "limit": 3}}))
    assert isinstance(fin, SubagentFinishedEvent) and fin.stop_reason.limit == 3 and fin.last_assistant_message is None
    assert fin.text == "" and fin.session_id == "p"

    # A known type whose data does not fit is passed through rather than breaking the stream.
    bad_payload = {"sessionId": "s1", "event": {"type": "turn/start", "seq": 1, "time": 0, "data": {"turn": "first"}}}
    bad = event_from_notification(Notification("session.event", bad_payload))
    assert isinstance(bad, UnknownEvent) and bad.params is bad_payload and bad.type == "turn/start"
    weird = event_from_notification(Notification("session.event", {"sessionId": "s1", "event": "not an object"}))
    assert isinstance(weird, UnknownEvent) and weird.type is None and weird.session_id == "s1"


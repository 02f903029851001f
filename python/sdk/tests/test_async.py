"""AsyncDeepSeekHarness / AsyncSession / AsyncTurnStream: results, cancellation semantics
(task.cancel, asyncio.timeout, task groups, closing streams early), concurrency."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from deepseek_harness import (
    AssistantMessageEvent,
    AsyncDeepSeekHarness,
    AsyncSession,
    AsyncTurnStream,
    InvalidParamsError,
    RequestTimeoutError,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDeltaEvent,
    ToolResultEvent,
    TransportClosedError,
    TurnEndEvent,
    TurnResult,
    UserMessageEvent,
)

from conftest import SUBAGENT_SCRIPT, read_fake_log, run_async
from test_stream import HANG_THEN_DONE, TOOL_TURN, aborted_turn_ends

needs_311 = pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout / TaskGroup are Python 3.11+")


def on_first_delta(flag: asyncio.Event):
    """An on_notification callback that sets ``flag`` once the turn streams text."""

    def callback(n):
        if n.event_type == "assistant/chunk":
            flag.set()

    return callback


def test_run_and_sessions(backend):
    async def main():
        async with backend.async_harness(TOOL_TURN) as h:
            assert h.initialize_response.protocol_version == 1
            threads = set()
            s = h.start_session()
            assert isinstance(s, AsyncSession)
            first = await s.run("one", on_notification=lambda n: threads.add(threading.get_ident()))
            second = await h.run("two", session_id=s.id)
            other = await h.run("three")
            return h, s, first, second, other, threads, threading.get_ident()

    h, s, first, second, other, threads, loop_thread = run_async(main())
    assert isinstance(first, TurnResult) and (first.status, first.final_response) == ("ok", "It greets you.")
    assert first.session_id == second.session_id == s.id != other.session_id
    assert second.events[0].seq > first.events[-1].seq  # the same conversation, continued
    assert (first.usage.input_tokens, first.usage.output_tokens) == (24, 10)
    assert threads == {loop_thread}  # callbacks run on the event loop
    assert h.client.closed and h.client.process.returncode == 0


def test_task_cancel_aborts_the_turn_then_propagates(backend):
    async def main():
        async with backend.async_harness(HANG_THEN_DONE) as h:
            s = h.start_session()
            sub = h.client.subscribe_session_notifications(s.id)
            streaming = asyncio.Event()
            task = asyncio.create_task(s.run("hang", on_notification=on_first_delta(streaming)))
            await streaming.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert task.cancelled()
            # Settled (aborted) before CancelledError reached us.
            assert len(aborted_turn_ends(sub)) == 1
            return await s.run("next")

    r = run_async(main())
    assert (r.status, r.final_response) == ("ok", "done")


def test_cancel_reaches_the_bridge_once(fake, fake_log):
    async def main():
        async with fake.async_harness(HANG_THEN_DONE, env={"FAKE_BRIDGE_LOG": str(fake_log)}) as h:
            s = h.start_session("s1")
            streaming = asyncio.Event()
            task = asyncio.create_task(s.run("hang", on_notification=on_first_delta(streaming)))
            await streaming.wait()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await s.run("next")

    run_async(main())
    methods = [(f.get("method"), f.get("sessionId")) for f in read_fake_log(fake_log) if "method" in f]
    assert methods.count(("session/cancel", "s1")) == 1 and methods.count(("session/prompt", "s1")) == 2


@needs_311
def test_asyncio_timeout_aborts_the_turn(backend):
    async def main():
        async with backend.async_harness(HANG_THEN_DONE) as h:
            s = h.start_session()
            sub = h.client.subscribe_session_notifications(s.id)
            loop = asyncio.get_running_loop()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(None) as deadline:
                    # The deadline is set once the turn streams: it is then surely in flight.
                    await s.run("hang", on_notification=lambda n: deadline.reschedule(loop.time()))
            assert len(aborted_turn_ends(sub)) == 1
            return await s.run("next")

    assert run_async(main()).final_response == "done"


@needs_311
def test_task_group_failure_aborts_sibling_turns(backend):
    async def main():
        async with backend.async_harness(HANG_THEN_DONE) as h:
            a, b = h.start_session(), h.start_session()
            sub = h.client.subscribe_notifications("session.event")
            a_streams, b_streams = asyncio.Event(), asyncio.Event()

            async def fail_when_both_stream():
                await a_streams.wait()
                await b_streams.wait()
                raise ValueError("boom")

            with pytest.raises(ExceptionGroup) as info:  # noqa: F821 - Python 3.11+
                async with asyncio.TaskGroup() as tg:
                    tg.create_task(a.run("hang", on_notification=on_first_delta(a_streams)))
                    tg.create_task(b.run("hang", on_notification=on_first_delta(b_streams)))
                    tg.create_task(fail_when_both_stream())
            assert [type(e) for e in info.value.exceptions] == [ValueError]
            aborted = {n.payload["sessionId"] for n in aborted_turn_ends(sub)}
            assert aborted == {a.id, b.id}
            return await asyncio.gather(a.run("next"), b.run("next"))

    assert [r.final_response for r in run_async(main())] == ["done", "done"]


def test_twenty_concurrent_sessions_each_get_only_their_own_notifications(backend):
    """Ten sessions run, ten stream, all at once on one bridge; every turn runs a subagent."""

    async def collect(stream):
        return [item async for item in stream]

    async def main():
        async with backend.async_harness(SUBAGENT_SCRIPT) as h:
            sessions = [h.start_session(f"sess-{i}") for i in range(20)]
            work = [s.run(f"delegate {i}") if i % 2 == 0 else collect(s.stream(f"delegate {i}"))
                    for i, s in enumerate(sessions)]
            return sessions, await asyncio.gather(*work)

    sessions, outcomes = run_async(main(), seconds=180)
    children = set()
    for i, (s, outcome) in enumerate(zip(sessions, outcomes)):
        r = outcome if i % 2 == 0 else outcome[-1]
        assert isinstance(r, TurnResult)
        assert (r.session_id, r.status, r.final_response) == (s.id, "ok", "parent done")
        assert r.events[0].data["content"][0]["text"] == f"delegate {i}"
        (started,) = [n for n in r.notifications if n.method == "subagent.started"]
        child = started.payload["childSessionId"]
        children.add(child)
        own = {s.id, child}
        for n in r.notifications:
            p = n.payload
            assert (p["sessionId"] if n.method == "session.event" else p["parentSessionId"]) in own
        assert any(n.payload.get("sessionId") == child for n in r.notifications)
        if i % 2:
            # The streamed events are exactly the result's notifications, typed.
            events = outcome[:-1]
            assert len(events) == len(r.notifications)
            assert {e.session_id for e in events} == own
    assert len(children) == 20


def test_stream_of_a_tool_turn(backend):
    async def main():
        async with backend.async_harness(TOOL_TURN) as h:
            stream = h.start_session().stream("hi")
            assert isinstance(stream, AsyncTurnStream) and stream.result is None
            items = [item async for item in stream]
            return stream, items

    stream, items = run_async(main())
    *events, last = items
    assert isinstance(last, TurnResult) and last is stream.result and last.ok
    assert isinstance(events[0], UserMessageEvent) and isinstance(events[-1], TurnEndEvent)
    assert len(events) == len(last.notifications)
    text = "".join(e.text for e in events if isinstance(e, TextDeltaEvent))
    assert text == "Reading the README.It greets you."
    (call,) = [c for e in events if isinstance(e, AssistantMessageEvent) for c in e.tool_calls]
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert (call.name, result.call_id) == ("read_file", call.id)


def test_stream_of_a_subagent_turn(backend):
    async def main():
        async with backend.async_harness(SUBAGENT_SCRIPT) as h:
            async with h.stream("delegate", session_id="root") as stream:
                return [item async for item in stream]

    *events, last = run_async(main())
    kinds = [type(e) for e in events]
    assert kinds.index(SubagentStartedEvent) < kinds.index(SubagentFinishedEvent)
    assert last.final_response == "parent done"


@pytest.mark.parametrize("how", ["aclose", "async with", "break", "cancel the task"])
def test_closing_a_stream_early_cancels_the_turn(backend, how):
    async def first_delta(stream):
        async for ev in stream:
            if isinstance(ev, TextDeltaEvent):
                return ev

    async def main():
        async with backend.async_harness(HANG_THEN_DONE) as h:
            s = h.start_session()
            sub = h.client.subscribe_session_notifications(s.id)
            if how == "aclose":
                stream = s.stream("hang")
                await first_delta(stream)
                await stream.aclose()
                await stream.aclose()  # idempotent
                assert [x async for x in stream] == [] and stream.result is None
                assert len(aborted_turn_ends(sub)) == 1  # settled when aclose returned
            elif how == "async with":
                async with s.stream("hang") as stream:
                    await first_delta(stream)
                assert len(aborted_turn_ends(sub)) == 1
            elif how == "break":
                # Python does not close an async iterator on break; the dropped stream is
                # cancelled from the loop, and the next turn of the session waits for that.
                async for ev in s.stream("hang"):
                    if isinstance(ev, TextDeltaEvent):
                        break
            else:
                streaming = asyncio.Event()

                async def consume():
                    async for ev in s.stream("hang"):
                        if isinstance(ev, TextDeltaEvent):
                            streaming.set()

                task = asyncio.create_task(consume())
                await streaming.wait()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert len(aborted_turn_ends(sub)) == 1
            r = await s.run("again")
            if how == "break":
                assert len(aborted_turn_ends(sub)) == 1
            return r

    r = run_async(main())
    assert (r.status, r.final_response) == ("ok", "done")


def test_cancel_method_settles_the_run_aborted(backend):
    async def main():
        async with backend.async_harness(HANG_THEN_DONE) as h:
            s = h.start_session()
            streaming = asyncio.Event()
            task = asyncio.create_task(s.run("hang", on_notification=on_first_delta(streaming)))
            await streaming.wait()
            cancelled = await s.cancel()
            return cancelled, await task, await s.cancel()

    cancelled, r, again = run_async(main())
    assert cancelled is True and again is False
    assert (r.status, r.reason.kind) == ("aborted", "aborted")
    assert r.events[-1].type == "turn/end"


def test_callback_error_cancels_the_turn_and_is_reraised(fake):
    async def main():
        async with fake.async_harness(HANG_THEN_DONE) as h:
            s = h.start_session()
            sub = h.client.subscribe_session_notifications(s.id)

            def explode(n):
                if n.event_type == "assistant/chunk":
                    raise KeyError("from the callback")

            with pytest.raises(KeyError):
                await s.run("hang", on_notification=explode)
            assert len(aborted_turn_ends(sub)) == 1
            return await s.run("next")

    assert run_async(main()).final_response == "done"


def test_request_timeout_cancels_the_turn(fake):
    async def main():
        # As in test_stream.py: the timeout bounds initialize too, which a busy machine may take over 1 s to answer.
        async with fake.async_harness(HANG_THEN_DONE, request_timeout_seconds=5.0) as h:
            s = h.start_session()
            with pytest.raises(RequestTimeoutError):
                await s.run("hang")
            return await s.run("next")

    assert run_async(main()).final_response == "done"


def test_bridge_death_fails_the_turn(fake):
    async def main():
        h = fake.async_harness(env={"FAKE_BRIDGE_MODE": "die-mid-request"})
        async with h:
            with pytest.raises(TransportClosedError) as info:
                await h.run("hi")
            stream = h.stream("again")
            with pytest.raises(TransportClosedError):
                await stream.__anext__()
            return info.value

    err = run_async(main())
    assert err.exit_code == 3 and any("crashing on purpose" in line for line in err.stderr_tail)


def test_concurrent_first_runs_share_one_start(fake, fake_log):
    async def main():
        h = fake.async_harness(env={"FAKE_BRIDGE_LOG": str(fake_log)})
        try:
            return await asyncio.gather(*(h.run(f"hi {i}") for i in range(5)))
        finally:
            await h.close()

    assert all(r.ok for r in run_async(main()))
    frames = read_fake_log(fake_log)
    assert sum(1 for f in frames if "argv" in f) == 1  # one bridge process
    assert [f["method"] for f in frames if "method" in f].count("initialize") == 1


def test_a_failed_start_raises_and_closes(fake):
    async def main():
        h = AsyncDeepSeekHarness(provider="nope", model="demo", cwd=fake.workspace, bridge_bin=fake.bridge)
        with pytest.raises(InvalidParamsError):
            await h.start()
        return h

    h = run_async(main())
    assert h.client.closed

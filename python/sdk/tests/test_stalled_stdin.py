"""A bridge that stops talking with its client: one that stops reading its stdin (stopped with
SIGSTOP, as a process stuck on a full disk or a debugger would be) while a request larger than
the pipe's buffer is on its way, and one that closes its stdout but lives on.

A bridge that stops reading:

* the blocking ``run`` still ends with :class:`RequestTimeoutError` at its timeout, and
  ``close()`` still stops the bridge — from the thread of the call or from another one while
  the call waits — leaving no SDK thread behind;
* the asyncio front's event loop keeps running meanwhile (``asyncio.wait_for`` ends the call);
* a bridge that resumes reading gets every request whole and in order (the turn completes with
  the prompt exactly as sent); one killed meanwhile fails the call;
* Ctrl-C during the long ``close()`` of such a bridge raises at once and the bridge still ends.

A bridge that closes its stdout: the pending call fails saying so (not "exited"), and
``close()`` ends the bridge.

Every wait is guarded by :func:`call_within`: a hang fails the test, never the suite.
"""

from __future__ import annotations

import _thread
import asyncio
import os
import signal
import threading
import time
from typing import Any, Iterator, List, Tuple

import pytest

from deepseek_harness import DeepSeekHarness, UserMessageEvent
from deepseek_harness.errors import RequestTimeoutError, TransportClosedError

from conftest import Backend, call_within, wait_until

#: Larger than a pipe's buffer (64 KiB on Linux) many times over.
BIG = "x" * (1 << 20)
SDK_THREADS = ("harness-bridge",)


def sdk_threads() -> List[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(SDK_THREADS)]


@pytest.fixture
def stopped() -> Iterator[List[int]]:
    """The pids of the bridges a test stopped: killed at teardown whatever happened, so that a
    failing test never leaves a stopped bridge (nor a call blocked on it) to the next one."""
    pids: List[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def stopped_harness(backend: Backend, stopped: List[int]) -> DeepSeekHarness:
    """A started harness whose bridge answered once and is now stopped."""
    h = backend.harness(shutdown_timeout_seconds=1.0)
    h.run("warm up")
    pid = h.client.process.pid
    stopped.append(pid)
    os.kill(pid, signal.SIGSTOP)
    return h


def run_in_background(h: DeepSeekHarness, prompt: str) -> Tuple[threading.Thread, List[BaseException]]:
    """``h.run(prompt)`` on a daemon thread; what it raises lands in the returned list."""
    outcome: List[BaseException] = []

    def run() -> None:
        try:
            h.run(prompt)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    caller = threading.Thread(target=run, daemon=True)
    caller.start()
    return caller, outcome


def test_a_timed_out_request_to_a_bridge_that_stopped_reading_raises_and_closes(backend: Backend, stopped: List[int]) -> None:
    before = sdk_threads()
    h = stopped_harness(backend, stopped)
    proc = h.client.process
    h.client.request_timeout_seconds = 1.0
    with pytest.raises(RequestTimeoutError):
        call_within(60, h.run, BIG)
    call_within(60, h.close)
    assert proc.poll() is not None
    assert wait_until(lambda: sdk_threads() == before), sdk_threads()


def test_close_from_another_thread_ends_a_call_waiting_on_a_bridge_that_stopped_reading(backend: Backend, stopped: List[int]) -> None:
    h = stopped_harness(backend, stopped)
    proc = h.client.process
    caller, outcome = run_in_background(h, BIG)
    time.sleep(0.5)  # the call is waiting (or, before the fix, blocked writing)
    call_within(60, h.close)
    caller.join(30)
    assert not caller.is_alive(), "the call outlived close()"
    assert len(outcome) == 1 and isinstance(outcome[0], TransportClosedError), outcome
    assert proc.poll() is not None


def test_the_event_loop_keeps_running_while_the_bridge_does_not_read(real: Backend, stopped: List[int]) -> None:
    h = real.async_harness(shutdown_timeout_seconds=1.0)

    async def scenario() -> int:
        async with h:
            await h.run("warm up")
            pid = h._harness.client.process.pid
            stopped.append(pid)
            os.kill(pid, signal.SIGSTOP)
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(h.run(BIG), 1.0)
            ticker.cancel()
            return ticks

    ticks = call_within(60, asyncio.run, scenario())
    assert ticks > 0


def test_a_bridge_that_resumes_reading_gets_every_request_whole_and_in_order(real: Backend, stopped: List[int]) -> None:
    h = stopped_harness(real, stopped)
    pid = h.client.process.pid
    session = h.start_session("resumed")
    results: List[Any] = []
    caller = threading.Thread(target=lambda: results.append(session.run(BIG)), daemon=True)
    caller.start()
    time.sleep(0.5)  # the prompt is on its way: the pipe took what it could
    os.kill(pid, signal.SIGCONT)
    caller.join(60)
    assert not caller.is_alive()
    assert results and results[0].status == "ok"
    prompts = [e for e in session.history() if isinstance(e, UserMessageEvent)]
    assert [p.text for p in prompts] == [BIG]


def test_a_bridge_killed_while_a_request_waits_to_be_written_fails_the_call(
        real: Backend, stopped: List[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The part of the prompt the pipe has not taken yet can no longer be written: the call
    raises :class:`TransportClosedError` with the exit status, and no SDK thread fails or stays."""
    before = sdk_threads()
    thread_failures: List[Any] = []
    monkeypatch.setattr(threading, "excepthook", thread_failures.append)
    h = stopped_harness(real, stopped)
    pid = h.client.process.pid
    caller, outcome = run_in_background(h, BIG)
    time.sleep(0.5)  # the prompt is on its way: the pipe took what it could
    os.kill(pid, signal.SIGKILL)
    caller.join(30)
    assert not caller.is_alive(), "the call outlived its bridge"
    assert len(outcome) == 1 and isinstance(outcome[0], TransportClosedError), outcome
    assert outcome[0].exit_code == -signal.SIGKILL
    call_within(60, h.close)
    assert wait_until(lambda: sdk_threads() == before), sdk_threads()
    assert thread_failures == []


def test_ctrl_c_during_close_still_stops_the_bridge(backend: Backend, stopped: List[int]) -> None:
    """``close()`` of a bridge that does not answer takes up to three shutdown timeouts; a
    Ctrl-C meanwhile raises at once, and the bridge and the SDK's threads still end (a second
    ``close()`` has nothing left to do)."""
    before = sdk_threads()
    h = stopped_harness(backend, stopped)
    proc = h.client.process
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            h.close()
    finally:
        timer.cancel()
    h.close()
    assert wait_until(lambda: proc.poll() is not None), "the bridge outlived an interrupted close()"
    assert wait_until(lambda: sdk_threads() == before), sdk_threads()


def test_a_bridge_that_closes_its_stdout_but_lives_on_is_named_so(fake: Backend) -> None:
    """Nothing the bridge does can reach the client any more: the pending call fails, saying the
    bridge closed its stdout and is still running (not that it exited), and ``close()`` ends it."""
    c = fake.initialized_client(env={"FAKE_BRIDGE_MODE": "close-stdout"}, shutdown_timeout_seconds=1.0)
    with pytest.raises(TransportClosedError) as info:
        call_within(30, c.session_prompt, "s", "hi")
    assert "closed its stdout" in str(info.value) and "exited" not in str(info.value)
    assert info.value.exit_code is None
    call_within(30, c.close)
    assert c.process.poll() == 0


def test_requests_given_up_on_before_the_bridge_read_them_are_not_kept(backend: Backend, stopped: List[int]) -> None:
    """A caller that keeps sending to a stopped bridge, each call timing out: what waits to be
    written is the frame the pipe began taking, not every request ever made (each here larger
    than the pipe's buffer), and the bridge that resumes reading still answers."""
    h = stopped_harness(backend, stopped)
    client = h.client
    writer = client._link.process.stdin  # type: ignore[union-attr]
    for _ in range(20):
        with pytest.raises(RequestTimeoutError):
            call_within(60, client.session_steer, "no-such-session", BIG, timeout=0.05)
    assert writer.queued <= 1, writer.queued
    os.kill(client.process.pid, signal.SIGCONT)
    call_within(60, h.run, "after")
    call_within(60, h.close)

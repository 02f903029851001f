"""Frames nested deeper than the decoder's recursion limit, and a reader thread that dies.

``json.loads`` raises ``RecursionError`` (not ``ValueError``) past about 1 000 levels, and how
deep a tool's arguments or output nest is up to the model. Such a frame is dropped like any
corrupt line: ``run()``, ``stream()`` and subscriptions keep working, and so do later calls.
If the reader thread dies anyway, every pending and later call fails at once.
"""

from __future__ import annotations

import logging
import threading
from typing import List

import pytest

from deepseek_harness._internal.router import Router
from deepseek_harness.errors import TransportClosedError

from conftest import call_within

DEEP = {"FAKE_BRIDGE_MODE": "deep-nesting"}
HANG_SCRIPT = {"turns": [{"steps": [{"hang": True}]}]}


def _no_thread_dies(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    died: List[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(f"{args.thread.name}: {args.exc_value!r}"))
    return died


def test_run_and_stream_survive_deep_frames(fake, monkeypatch, caplog):
    died = _no_thread_dies(monkeypatch)
    caplog.set_level(logging.WARNING, logger="deepseek_harness")
    with fake.harness(env=DEEP) as h:
        s = h.start_session()
        first = call_within(60, s.run, "hi")
        assert first.status == "ok" and first.final_response
        events = call_within(60, lambda: list(s.stream("again")))
        assert events and events[-1].status == "ok"  # a stream ends with the turn's result
        assert call_within(60, s.run, "and again").status == "ok"
    assert died == []
    assert any("nested too deep" in r.getMessage() for r in caplog.records)


def test_a_subscription_survives_deep_frames(fake, monkeypatch):
    died = _no_thread_dies(monkeypatch)
    c = fake.initialized_client(env=DEEP)
    with c.subscribe_notifications() as everything, c.subscribe_session_notifications("s1") as mine:
        for _ in range(2):
            assert call_within(60, c.session_prompt, "s1", "hi").status == "ok"
        got = everything.drain()
        assert got and all(n.session_id == "s1" for n in got)
        assert [n.payload for n in mine.drain()] == [n.payload for n in got]
    assert call_within(60, c.session_cancel, "s1") is False
    assert died == []


def test_a_dead_reader_fails_pending_and_later_calls_at_once(fake, monkeypatch):
    armed = threading.Event()
    real_dispatch = Router.dispatch

    def dispatch(self, lines):
        if armed.is_set():
            raise RuntimeError("a bug in the reader")
        return real_dispatch(self, lines)

    # Patched before the client starts: its reader binds the router's dispatch when it starts.
    monkeypatch.setattr(Router, "dispatch", dispatch)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)  # the death is on purpose
    c = fake.initialized_client(script=HANG_SCRIPT)
    sub = c.subscribe_notifications()
    box = {}

    def prompt():
        try:
            box["result"] = c.session_prompt("hangs", "hi")
        except BaseException as exc:  # noqa: BLE001 - inspected below
            box["error"] = exc

    t = threading.Thread(target=prompt, daemon=True)
    t.start()
    assert sub.get(timeout=30) is not None  # the turn is running, the reader alive
    armed.set()
    # The next frame the bridge writes (the cancel's answer) kills the reader.
    with pytest.raises(TransportClosedError, match="reader thread failed.*RuntimeError: a bug in the reader"):
        call_within(30, c.session_cancel, "hangs")
    t.join(30)
    assert not t.is_alive(), "the pending prompt hangs after the reader died"
    assert isinstance(box.get("error"), TransportClosedError), box
    assert sub.get(timeout=30) is None or sub.closed
    with pytest.raises(TransportClosedError, match="reader thread"):
        call_within(10, c.session_prompt, "later", "hi")
    call_within(30, c.close)


def test_send_refuses_when_the_reader_is_gone(fake):
    c = fake.initialized_client()
    reader = c._reader
    stopped = threading.Thread(target=lambda: None)
    stopped.start()
    stopped.join()
    c._reader = stopped  # a reader that ended without failing anything (it must not happen)
    try:
        with pytest.raises(TransportClosedError, match="reader thread is not running"):
            call_within(10, c.session_prompt, "s", "hi")
    finally:
        c._reader = reader

"""Ctrl-C during a blocking ``run()`` (or a stream's ``next()``) returns at once and cancels the
turn without waiting for it; the session's next ``run``/``stream`` then waits (bounded) for that
turn to settle before it sends its prompt, as it would after a stream's ``close()``. Before, the
next prompt went out at once and found the session busy whenever the cancelled turn took a
moment to end (a command deaf to SIGTERM takes the bridge's 2 s grace): ``SessionBusyError``."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict

import pytest

from deepseek_harness import SessionBusyError, TurnResult

from conftest import Backend, call_within, wait_until


def deaf_script(started: Path) -> Dict[str, Any]:
    """Turn 1 runs a command that ignores SIGTERM (its cancel ends after the bridge's 2 s grace,
    with SIGKILL), touching ``started`` first; turn 2 answers at once."""
    command = f"trap '' TERM; touch {started}; while :; do sleep 0.1; done"
    return {"turns": [
        {"steps": [{"text": "working", "toolCalls": [{"id": "job", "name": "bash", "arguments": {"command": command}}]},
                   {"text": "never"}]},
        {"steps": [{"text": "second turn"}]},
    ]}


def interrupt_once(started: Path) -> threading.Thread:
    """Ctrl-C in the main thread (where the test runs) once the command runs: a real SIGINT, sent
    to that thread, so that its blocked wait is interrupted as a terminal's Ctrl-C does."""
    def fire() -> None:
        if wait_until(started.exists, 30):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]

    t = threading.Thread(target=fire, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("front", ["run", "stream"])
def test_the_next_run_after_ctrl_c_waits_for_the_cancelled_turn(real: Backend, tmp_path: Path, front: str) -> None:
    started = tmp_path / "started"
    h = real.harness(deaf_script(started), permission_mode="full")
    with h:
        s = h.start_session()
        interrupter = interrupt_once(started)
        began = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            if front == "run":
                s.run("go")
            else:
                for _ in s.stream("go"):
                    pass
        interrupter.join()
        assert time.monotonic() - began < 20, "Ctrl-C did not interrupt at once"
        # At once, as a Ctrl-C handler would: the turn is still ending (SIGKILL after 2 s).
        if front == "run":
            result = call_within(30, s.run, "again")
        else:
            result = call_within(30, lambda: list(s.stream("again"))[-1])
        assert isinstance(result, TurnResult) and result.ok and result.final_response == "second turn", result
        assert h.client._router.pending == {} and h.client._abandoned == {}


def test_the_wait_is_bounded_by_the_shutdown_timeout(real: Backend, tmp_path: Path) -> None:
    """A turn that does not settle within ``shutdown_timeout_seconds`` (what a stream's close()
    waits too) is not waited for any longer: the bridge answers busy, never a hang."""
    started = tmp_path / "started"
    h = real.harness(deaf_script(started), permission_mode="full", shutdown_timeout_seconds=0.3)
    with h:
        s = h.start_session()
        interrupter = interrupt_once(started)
        with pytest.raises(KeyboardInterrupt):
            s.run("go")
        interrupter.join()
        with pytest.raises(SessionBusyError):
            call_within(30, s.run, "again")
        assert h.client._router.pending == {} and h.client._abandoned == {}
        # Once the turn has ended, the session runs again.
        assert wait_until(lambda: ran_once(s), 30)


def ran_once(session: Any) -> bool:
    try:
        return bool(call_within(30, session.run, "again").ok)
    except SessionBusyError:
        return False

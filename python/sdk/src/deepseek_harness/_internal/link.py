"""A started bridge's plumbing: its process (with its never-blocking stdin), its reader thread,
the router and the request ids, with the two things done with them alone: write a request, and close.

:class:`Link` never points back at the :class:`~.connection.Connection` that made it. The
reader thread holds the link (it is the thread's target and arguments), and a thread holds
what it runs until it ends: were the link to hold its connection, a client dropped without
``close()`` would never be collected, and its bridge and threads would live until the
interpreter exited. So a dropped connection is collected, and its finalizer
(:func:`close_when_dropped`) closes the link it leaves behind.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
import warnings
import weakref
from typing import Any, Dict, Mapping, Optional

from ..errors import HarnessError, TransportClosedError
from .inbox import AnyInbox, Closed, Pending
from .outgoing import encode_request
from .process import BridgeProcess
from .router import Router

__all__ = ["Link", "close_when_dropped"]

log = logging.getLogger("deepseek_harness")


class Link:
    """One started bridge: what the caller's threads, the reader thread and a finalizer share."""

    def __init__(self, process: BridgeProcess, router: Router, max_line_bytes: int,
                 closed_reason: str = "the client was closed") -> None:
        self.process = process
        self.router = router
        #: The longest line the bridge takes (its command line's ``--max-line-bytes``): a longer
        #: request is refused here, never written (:func:`~.outgoing.encode_request`).
        self.max_line_bytes = max_line_bytes
        self.ids = itertools.count(1)
        #: What a request made after close is told (the connection's ``closed_reason``).
        self.closed_reason = closed_reason
        #: Set once close begins: requests other than ``shutdown`` are refused, and the end of
        #: the stream reads "the client was closed" rather than "harness-bridge exited".
        self.closing = False
        self.reader = threading.Thread(
            target=router.read_loop, args=(process, self.failed, self.ended),
            name="harness-bridge-reader", daemon=True,
        )

    def failed(self, reason: str) -> TransportClosedError:
        """The error every request gets once the transport failed for ``reason``."""
        if self.router.closed_error is not None:
            return self.router.closed_error
        return self.process.error(reason)

    def ended(self) -> TransportClosedError:
        """The reader reached EOF: why, with the exit code and the stderr tail. A bridge still
        running closed its stdout: nothing it does can reach this client any more."""
        if self.closing:
            return self.process.exited(self.closed_reason)
        error = self.process.exited("harness-bridge exited")
        if error.exit_code is None:
            return self.process.error("harness-bridge closed its stdout but is still running (no answer can come "
                                      "any more): close this client and start a new one")
        return error

    def send(self, method: str, params: Optional[Mapping[str, Any]], session_id: Optional[str] = None,
             allow_closing: bool = False, inbox: Optional[AnyInbox] = None) -> Pending:
        """Registers a waiter and writes the request. Never blocks on the pipe (the caller's
        thread, or the event loop, writes what the pipe takes and the rest is queued:
        :class:`~.stdin_writer.StdinWriter`), so the wait for the answer is where a timeout, a
        cancel or ``close()`` ends the call, even while the bridge does not read its stdin."""
        request_id = next(self.ids)
        pending = Pending(request_id, method, session_id, inbox)
        frame: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        # Before the waiter is registered: a request the bridge could not take (NaN, past its line
        # limit) raises to the caller here instead of being written and never answered.
        data = encode_request(frame, self.max_line_bytes)
        forked = self.process.forked()
        if forked is not None:
            raise forked
        router = self.router
        with router.lock:
            if router.closed_error is not None:
                raise router.closed_error
            if not self.reader.is_alive():
                raise self.failed("the SDK's reader thread is not running: close this client and start a new one")
            if self.closing and not allow_closing:
                raise TransportClosedError("the client is closing")
            router.add(pending, session_id)
        try:
            self.process.stdin.write(data, functools.partial(self._unsent, pending), pending)
        except (OSError, ValueError) as exc:
            router.forget(pending)
            raise self._write_error(exc) from exc
        return pending

    def withdraw(self, pending: Pending) -> None:
        """The caller gave up on ``pending``: its request, if still wholly queued, is never
        written (:meth:`~.stdin_writer.StdinWriter.withdraw`). Nothing in a fork, whose copy of
        the writer's lock may be held for ever."""
        if self.process.forked() is None:
            self.process.stdin.withdraw(pending)

    def _write_error(self, exc: BaseException) -> TransportClosedError:
        reason = f"could not write to harness-bridge: {exc}"
        if isinstance(exc, BrokenPipeError) and self.router.closed_error is None:
            # The bridge closed its stdin: it is exiting, and its exit status (which says why,
            # e.g. a crash at start under a low open-file limit) trails the closed pipe.
            return self.process.exited(reason)
        return self.failed(reason)

    def _unsent(self, pending: Pending, exc: OSError) -> None:
        """A queued request could not be written (on the stdin writer's thread): its waiter
        fails with why, as a write that failed at once would have (unless it failed already)."""
        router = self.router
        with router.lock:
            waiting = router.pending.get(pending.id) is pending
        if waiting:
            router.forget(pending)
            pending.inbox.put(Closed(self._write_error(exc)))

    def close(self, timeout: float) -> None:
        """``shutdown`` (waiting at most ``timeout``) → close stdin → wait → SIGTERM → wait →
        SIGKILL, then the reader and the stderr thread are joined and every waiter fails with
        :class:`TransportClosedError`. Called once (the connection's lifecycle lock sees to it)."""
        self.closing = True
        process, router = self.process, self.router
        if process.forked() is not None:
            # A fork's copy: the bridge and its threads are the parent's, and so is stopping them.
            process.close_copies()
            return
        if router.closed_error is None and process.proc.poll() is None:
            self._shutdown(timeout)
        process.stop(timeout)
        if self.reader is not threading.current_thread():
            self.reader.join(timeout)
        process.stderr_thread.join(timeout)
        process.stdin.join(timeout)
        router.fail_all(TransportClosedError(self.closed_reason, process.proc.returncode, list(process.stderr_tail)))
        process.close_pipes()

    def _shutdown(self, timeout: float) -> None:
        # Best effort: whatever the answer (none, an error), stdin is closed next.
        try:
            pending = self.send("shutdown", None, allow_closing=True)
        except HarnessError as exc:
            log.debug("shutdown request failed: %s", exc)
            return
        deadline = time.monotonic() + timeout
        try:
            item = pending.inbox.get(deadline)
        except TimeoutError:
            self.router.forget(pending)
            log.debug("shutdown request unanswered after %g s", timeout)
            return
        if type(item) is Closed:
            log.debug("shutdown request failed: %s", item.error)
        elif "error" in item.frame:
            log.debug("shutdown request failed: %r", item.frame["error"])


def close_when_dropped(owner: Any, link: Link, timeout: float) -> "weakref.finalize[Any, Any]":
    """Closes ``link`` once ``owner`` (its connection) is garbage collected unclosed, warning
    with a :class:`ResourceWarning` as an unclosed file does (ignored unless warnings are
    enabled, e.g. ``python -X dev``). The close runs on a daemon thread of its own: a finalizer
    may run on any thread, the reader's included, and must not block. ``close()`` detaches it;
    at interpreter exit :func:`~.process.reap_at_exit` closes the live clients instead (no
    thread can be started then)."""
    finalizer = weakref.finalize(owner, _close_dropped, link, timeout, repr(owner))
    finalizer.atexit = False
    return finalizer


def _close_dropped(link: Link, timeout: float, name: str) -> None:
    # The close starts before the warning: under `-W error` (a test suite's `filterwarnings =
    # error`, PYTHONWARNINGS=error) the warning raises out of this finalizer, and had it come
    # first the bridge and the SDK's threads would live on for the rest of the process (the
    # client is gone from the exit hook's weak set too). Raised, it is still reported, as an
    # exception ignored in a finalizer (pytest: PytestUnraisableExceptionWarning).
    threading.Thread(target=link.close, args=(timeout,), name="harness-bridge-dropped", daemon=True).start()
    warnings.warn(f"unclosed {name} (bridge pid {link.process.proc.pid}): shutting its bridge down; "
                  "call close() or use `with`",
                  ResourceWarning)

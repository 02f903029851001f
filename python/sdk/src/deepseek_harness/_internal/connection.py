"""A running bridge, as the requests see it: start, close, write a request, wait for its answer.

:class:`Connection` is the base of :class:`~deepseek_harness.HarnessClient`, which adds the
configuration, the command line and the protocol's requests. Threads:

* the caller's threads send requests, never blocking on the pipe (:mod:`.stdin_writer`: what
  the pipe does not take at once is carried by a short-lived thread);
* the reader thread (:mod:`.router`) frames stdout and routes every frame; it holds the
  :class:`~.link.Link` (never the connection), so a connection dropped unclosed is collected
  and its finalizer closes the bridge;
* the stderr thread (:mod:`.process`) drains stderr and keeps its tail for error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from pydantic import ValidationError

from ..errors import HarnessError, JsonRpcError, ProtocolError, RequestTimeoutError, TransportClosedError
from ..wire import SessionCancelParams
from .inbox import INF, AnyInbox, AsyncInbox, Closed, Pending
from .forking import renew_locks_in_child
from .link import Link, close_when_dropped
from .outgoing import DEFAULT_MAX_LINE_BYTES, max_line_bytes
from .process import BridgeProcess, PathLike, forget_at_exit, reap_at_exit
from .router import Interceptor, Router

__all__ = [
    "Connection", "validate", "send", "request", "arequest", "outcome", "forget", "try_cancel",
    "await_quietly", "answer_requests", "line_limit", "remember_abandoned", "take_abandoned",
]

log = logging.getLogger("deepseek_harness")


def validate(model: Any, value: Any, method: str) -> Any:
    """``value`` as ``model`` (a pydantic model); :class:`ProtocolError` naming ``method`` if not."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ProtocolError(f"malformed {method} result from harness-bridge: {exc}") from exc


class Connection:
    """The lifecycle and the request plumbing of one bridge process. Thread-safe."""

    #: Default timeout of every request (None: as long as the bridge lives).
    request_timeout_seconds: Optional[float]
    #: How long each step of :meth:`close` waits.
    shutdown_timeout_seconds: float

    def __init__(self) -> None:
        #: What a request made after :meth:`close` is told. A harness that owns this client says
        #: so in its own terms (:func:`.harness_setup.closed_reason`): its user never made a client.
        self.closed_reason = "the client was closed; create a new one"
        #: The resolved executable, once started.
        self.bridge_path: Optional[Path] = None
        self._process: Optional[BridgeProcess] = None
        self._link: Optional[Link] = None
        self._dropped: Optional[Any] = None
        self._router = Router()
        self._lifecycle_lock = threading.Lock()
        self._closing = False
        self._started = False
        # session id → the session/cancel sent for a turn whose caller gave up without waiting for
        # it to settle (Ctrl-C during run()): the session's next prompt waits for that answer
        # first (prompt.py settle_abandoned), or the bridge would find the session still busy.
        self._abandoned: Dict[str, Pending] = {}
        # A fork's close() (its exit hook's too) must not wait on a lock a parent thread held.
        renew_locks_in_child(self, "_lifecycle_lock")
        renew_locks_in_child(self._router, "lock")

    def _launch_spec(self) -> Tuple[List[str], Dict[str, str], Optional[PathLike]]:
        """The command line, the environment and the working directory to start with."""
        raise NotImplementedError

    # ------------------------------------------------------------------ lifecycle

    @property
    def started(self) -> bool:
        return self._started

    @property
    def closed(self) -> bool:
        return self._router.closed_error is not None

    @property
    def process(self) -> Optional[Any]:
        """The bridge process, a ``subprocess.Popen`` (for diagnostics)."""
        return self._process.proc if self._process is not None else None

    @property
    def stderr_tail(self) -> List[str]:
        """The last lines (at most 400) the bridge wrote to stderr."""
        return list(self._process.stderr_tail) if self._process is not None else []

    def start(self) -> Any:
        """Finds the binary and spawns the bridge. Idempotent."""
        with self._lifecycle_lock:
            if self._started:
                return self
            if self._closing:
                raise TransportClosedError(self.closed_reason)
            cmd, env, cwd = self._launch_spec()
            log.debug("starting %s", cmd)
            process = BridgeProcess(cmd, env, cwd)
            link = Link(process, self._router, max_line_bytes(cmd), self.closed_reason)
            try:
                link.reader.start()
            except BaseException:
                # No reader (no thread to be had: a low `ulimit -u`): nobody would ever stop this
                # bridge, and one stuck at start does not notice its parent's exit either.
                process.kill()
                raise
            self._process = process
            self._link = link
            self._started = True
            reap_at_exit(self)
            self._dropped = close_when_dropped(self, link, self.shutdown_timeout_seconds)
            return self

    def close(self) -> None:
        """Stops the bridge: ``shutdown`` (with a timeout) → close stdin → wait → SIGTERM →
        wait → SIGKILL. Idempotent; safe from any thread. Pending requests fail with
        :class:`TransportClosedError` if the bridge did not answer them first. A client
        garbage collected unclosed is closed so too (with a :class:`ResourceWarning`). Interrupted
        (``KeyboardInterrupt``), it raises at once and finishes closing in the background."""
        with self._lifecycle_lock:
            if self._closing:
                return
            self._closing = True
            link = self._link
        forget_at_exit(self)
        if self._dropped is not None:
            self._dropped.detach()
        if link is None:
            self._router.fail_all(TransportClosedError(self.closed_reason))
            return
        try:
            link.close(self.shutdown_timeout_seconds)
        except BaseException:
            # Interrupted (Ctrl-C while a slow bridge is stopped): the caller gets its exception
            # at once, and the close still completes without it, on a daemon thread of its own,
            # since a later close() returns at once: the bridge and the SDK's threads still end.
            threading.Thread(target=link.close, args=(self.shutdown_timeout_seconds,),
                             name="harness-bridge-closing", daemon=True).start()
            raise

    @property
    def _reader(self) -> Optional[threading.Thread]:
        return self._link.reader if self._link is not None else None

    @_reader.setter
    def _reader(self, reader: threading.Thread) -> None:
        assert self._link is not None
        self._link.reader = reader

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def _send(self, method: str, params: Optional[Mapping[str, Any]], session_id: Optional[str] = None,
              inbox: Optional[AnyInbox] = None) -> Pending:
        """Registers a waiter and writes the request (:meth:`Link.send`)."""
        link = self._link
        if link is None:
            raise HarnessError("the client is not started: call start() first")
        return link.send(method, params, session_id, inbox=inbox)

    def _try_cancel(self, session_id: str, inbox: Optional[AnyInbox] = None) -> Optional[Pending]:
        try:
            params: SessionCancelParams = {"sessionId": session_id}
            return self._send("session/cancel", params, inbox=inbox)
        except HarnessError as exc:
            log.debug("could not cancel session %s: %s", session_id, exc)
            return None

    def _request(self, method: str, params: Optional[Mapping[str, Any]], *, timeout: Optional[float] = None) -> Any:
        pending = self._send(method, params)
        with self._waiting(pending, method, timeout) as deadline:
            item = pending.inbox.get(deadline)
        return self._outcome(item, method)

    async def _arequest(self, method: str, params: Optional[Mapping[str, Any]], *, timeout: Optional[float] = None) -> Any:
        """:meth:`_request` for the asyncio front (a cancelled task just drops its waiter)."""
        pending = self._send(method, params, inbox=AsyncInbox(asyncio.get_running_loop()))
        with self._waiting(pending, method, timeout) as deadline:
            item = await pending.inbox.aget(deadline)
        return self._outcome(item, method)

    @contextlib.contextmanager
    def _waiting(self, pending: Pending, method: str, timeout: Optional[float]) -> Iterator[float]:
        """Around the wait for a response: gives the deadline (``timeout``, else
        ``request_timeout_seconds``); a timeout raises :class:`RequestTimeoutError`, and whatever
        ends the wait early drops the waiter."""
        if timeout is None:
            timeout = self.request_timeout_seconds
        try:
            yield INF if timeout is None else time.monotonic() + timeout
        except TimeoutError:
            self._forget(pending)
            assert timeout is not None
            raise RequestTimeoutError(method, timeout) from None
        except BaseException:
            self._forget(pending)
            raise

    def _outcome(self, item: Any, method: str) -> Any:
        if type(item) is Closed:
            raise item.error
        return self._result_of(item.frame, method)

    def _await_quietly(self, pending: Pending, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        try:
            while True:
                item = pending.inbox.get(deadline)
                if type(item) is not list:
                    return
        except TimeoutError:
            self._forget(pending)

    @staticmethod
    def _result_of(frame: Dict[str, Any], method: str) -> Any:
        if "error" in frame:
            raise JsonRpcError.from_wire(frame["error"], method)
        return frame.get("result")

    def _forget(self, pending: Pending) -> None:
        self._router.forget(pending)
        link = self._link
        if link is not None:
            link.withdraw(pending)


# ------------------------------------------------------------------ the internal package's API
#
# What the rest of _internal (prompts, the sessions API, client tools) does with a connection.
# Functions of this module rather than public methods: HarnessClient is a Connection, and these
# are not its users' API; the private names they reach stay inside the module that defines them.


def send(conn: Connection, method: str, params: Optional[Mapping[str, Any]], session_id: Optional[str] = None,
         inbox: Optional[AnyInbox] = None) -> Pending:
    """Writes a request whose answer (and, with ``session_id``, whose session's notifications)
    go to ``inbox``; the caller waits on ``pending.inbox`` and reads the answer with :func:`outcome`."""
    return conn._send(method, params, session_id, inbox=inbox)


def request(conn: Connection, method: str, params: Optional[Mapping[str, Any]], *,
            timeout: Optional[float] = None) -> Any:
    """Sends a request and waits for its result (``timeout``: else the connection's default)."""
    return conn._request(method, params, timeout=timeout)


async def arequest(conn: Connection, method: str, params: Optional[Mapping[str, Any]], *,
                   timeout: Optional[float] = None) -> Any:
    """:func:`request`, awaiting."""
    return await conn._arequest(method, params, timeout=timeout)


def outcome(conn: Connection, item: Any, method: str) -> Any:
    """The result of the answer ``item`` taken from an inbox; raises the error it carries."""
    return conn._outcome(item, method)


def forget(conn: Connection, pending: Pending) -> None:
    """Drops a request's waiter: whatever still arrives for it is discarded."""
    conn._forget(pending)


def try_cancel(conn: Connection, session_id: str, inbox: Optional[AnyInbox] = None) -> Optional[Pending]:
    """Sends ``session/cancel``; None when it could not be sent (the bridge is gone)."""
    return conn._try_cancel(session_id, inbox)


def await_quietly(conn: Connection, pending: Pending, timeout: float) -> None:
    """Waits (at most ``timeout``) for a request's answer, dropping it and what comes before it."""
    conn._await_quietly(pending, timeout)


def answer_requests(conn: Connection, interceptor: Interceptor, on_settled: Callable[[Set[str]], None]) -> None:
    """Makes ``interceptor`` the one who answers ``tool/request`` and ``permission/request``
    (on the reader thread), and ``on_settled`` hear of every prompt answered."""
    conn._router.set_interceptor(interceptor, on_settled)


def line_limit(conn: Connection) -> int:
    """The longest request line the connection's bridge takes (its ``--max-line-bytes``; the
    default before it started)."""
    link = conn._link
    return link.max_line_bytes if link is not None else DEFAULT_MAX_LINE_BYTES


def remember_abandoned(conn: Connection, session_id: str, cancel: Pending) -> None:
    """Keeps the ``session/cancel`` of a turn given up on without waiting, for the session's next
    prompt to wait for (:func:`take_abandoned`). Entries answered meanwhile for sessions nobody
    prompted again are dropped here, so the map holds only cancels still in flight and the last."""
    abandoned = conn._abandoned
    for sid, pending in list(abandoned.items()):
        if pending.inbox.items:
            abandoned.pop(sid, None)
    abandoned[session_id] = cancel


def take_abandoned(conn: Connection, session_id: str) -> Optional[Pending]:
    """The ``session/cancel`` a prompt of ``session_id`` must wait for first, if any (taken once)."""
    return conn._abandoned.pop(session_id, None)

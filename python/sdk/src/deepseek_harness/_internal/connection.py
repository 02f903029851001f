"""A running bridge, as the requests see it: start, close, write a request, wait for its answer.

:class:`Connection` is the base of :class:`~deepseek_harness.HarnessClient`, which adds the
configuration, the command line and the protocol's requests. Threads:

* the caller's threads send requests (one lock serialises writes to stdin);
* the reader thread (:mod:`.router`) frames stdout and routes every frame;
* the stderr thread (:mod:`.process`) drains stderr and keeps its tail for error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from pydantic import ValidationError

from ..errors import HarnessError, JsonRpcError, ProtocolError, RequestTimeoutError, TransportClosedError
from ..wire import SessionCancelParams
from .inbox import INF, AnyInbox, AsyncInbox, Closed, Pending
from .process import BridgeProcess, PathLike, forget_at_exit, reap_at_exit
from .router import Interceptor, Router

__all__ = [
    "Connection", "validate", "send", "request", "arequest", "outcome", "forget", "try_cancel",
    "await_quietly", "answer_requests",
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
        #: The resolved executable, once started.
        self.bridge_path: Optional[Path] = None
        self._process: Optional[BridgeProcess] = None
        self._reader: Optional[threading.Thread] = None
        self._router = Router()
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._lifecycle_lock = threading.Lock()
        self._closing = False
        self._started = False

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
                raise TransportClosedError("the client was closed; create a new one")
            cmd, env, cwd = self._launch_spec()
            log.debug("starting %s", cmd)
            process = BridgeProcess(cmd, env, cwd)
            self._process = process
            self._reader = threading.Thread(
                target=self._router.read_loop, args=(process, self._transport_error, self._ended),
                name="harness-bridge-reader", daemon=True,
            )
            self._reader.start()
            self._started = True
            reap_at_exit(self)
            return self

    def close(self) -> None:
        """Stops the bridge: ``shutdown`` (with a timeout) → close stdin → wait → SIGTERM →
        wait → SIGKILL. Idempotent; safe from any thread. Pending requests fail with
        :class:`TransportClosedError` if the bridge did not answer them first."""
        with self._lifecycle_lock:
            if self._closing:
                return
            self._closing = True
            process = self._process
        forget_at_exit(self)
        if process is None:
            self._router.fail_all(TransportClosedError("the client was closed"))
            return
        timeout = self.shutdown_timeout_seconds
        if self._router.closed_error is None and process.proc.poll() is None:
            try:
                self._request("shutdown", None, timeout=timeout, allow_closing=True)
            except HarnessError as exc:
                log.debug("shutdown request failed: %s", exc)
        process.stop(timeout, self._write_lock)
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout)
        process.stderr_thread.join(timeout)
        self._router.fail_all(TransportClosedError("the client was closed", process.proc.returncode, self.stderr_tail))
        process.close_pipes()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _ended(self) -> TransportClosedError:
        """The reader reached EOF: why, with the exit code and the stderr tail."""
        assert self._process is not None
        return self._process.exited("the client was closed" if self._closing else "harness-bridge exited")

    def _transport_error(self, reason: str) -> TransportClosedError:
        if self._router.closed_error is not None:
            return self._router.closed_error
        if self._process is None:
            return TransportClosedError(reason, None, [])
        return self._process.error(reason)

    # ------------------------------------------------------------------ requests

    def _send(self, method: str, params: Optional[Mapping[str, Any]], session_id: Optional[str] = None,
              allow_closing: bool = False, inbox: Optional[AnyInbox] = None) -> Pending:
        """Registers a waiter and writes the request. The write happens on the caller's thread
        (for the asyncio front: on the loop); requests are small and the bridge reads stdin
        continuously, so it does not block in practice."""
        if not self._started:
            raise HarnessError("the client is not started: call start() first")
        request_id = next(self._ids)
        pending = Pending(request_id, method, session_id, inbox)
        frame: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        # NaN and Infinity are not JSON (the bridge refuses the line, and the id with it): the
        # caller gets the ValueError instead of a request that never answers.
        data = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"
        router = self._router
        with router.lock:
            if router.closed_error is not None:
                raise router.closed_error
            reader = self._reader
            if reader is not None and not reader.is_alive():
                raise self._transport_error("the SDK's reader thread is not running: close this client and start a new one")
            if self._closing and not allow_closing:
                raise TransportClosedError("the client is closing")
            router.add(pending, session_id)
        try:
            with self._write_lock:
                assert self._process is not None
                stdin = self._process.stdin
                stdin.write(data)
                stdin.flush()
        except (OSError, ValueError) as exc:
            router.forget(pending)
            reason = f"could not write to harness-bridge: {exc}"
            if isinstance(exc, BrokenPipeError) and router.closed_error is None and self._process is not None:
                # The bridge closed its stdin: it is exiting, and its exit status (which says why,
                # e.g. a crash at start under a low open-file limit) trails the closed pipe.
                raise self._process.exited(reason) from exc
            raise self._transport_error(reason) from exc
        return pending

    def _try_cancel(self, session_id: str, inbox: Optional[AnyInbox] = None) -> Optional[Pending]:
        try:
            params: SessionCancelParams = {"sessionId": session_id}
            return self._send("session/cancel", params, inbox=inbox)
        except HarnessError as exc:
            log.debug("could not cancel session %s: %s", session_id, exc)
            return None

    def _request(self, method: str, params: Optional[Mapping[str, Any]], *, timeout: Optional[float] = None,
                 allow_closing: bool = False) -> Any:
        pending = self._send(method, params, allow_closing=allow_closing)
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

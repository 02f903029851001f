"""``HarnessClient``: the low-level, thread-safe client of ``harness-bridge --stdio``.

One bridge process, three threads of ours around it:

* the caller's threads send requests (one lock serialises writes to stdin);
* a reader thread reads stdout as binary lines (no length limit), decodes each frame and
  routes it: a response to its waiter, a notification to the inbox of the prompt of its
  session (and of that session's subagents) and to the subscriptions that want it;
* a stderr thread drains stderr continuously, keeps the last 400 lines for error messages and
  forwards every line to the ``deepseek_harness.bridge`` logger.

The client only sends requests and only receives responses and notifications. A frame shaped
like a server request (``method`` and ``id``) is dropped by an explicit guard in the reader.

Ordering: the reader appends a prompt's notifications and finally its response to one inbox,
in stream order; ``session_prompt`` drains that inbox on the caller's thread, calling
``on_notification`` for each notification, and returns when it reaches the response. So every
notification that arrived before the response has been handed to the callback before
``session_prompt`` returns, and callbacks never run on the reader thread.

Two kinds of inbox share that design: :class:`_Inbox` wakes a blocked thread, and
:class:`_AsyncInbox` wakes an asyncio task (``loop.call_soon_threadsafe``, only when the task
is actually waiting). :class:`_PromptCall` is the consumer side of one prompt for both: it pulls
batches in stream order, settles on the response, and cancels a turn whose consumer gives up
(waiting, bounded, until it has settled). The blocking front (:meth:`HarnessClient.session_prompt`,
``Session.stream``) and the asyncio front (``deepseek_harness.async_api``) differ only in how
they wait; framing, routing, cancellation and the binary lookup exist once.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import io
import itertools
import json
import logging
import os
import subprocess
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import (
    Any,
    Callable,
    Collection,
    Deque,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Union,
)

from pydantic import ValidationError

from ._binary import find_bridge_binary
from ._meta import UNKNOWN_VERSION, __version__
from .errors import (
    HarnessError,
    JsonRpcError,
    ProtocolError,
    RequestTimeoutError,
    TransportClosedError,
)
from ._internal.decode import DECODE_ERRORS as _DECODE_ERRORS
from ._internal.decode import FAST_LEN as _FAST_LEN
from ._internal.decode import FAST_PREFIX as _FAST_PREFIX
from ._internal.decode import decode_batch  # noqa: F401 - api.py's
from ._internal.decode import deliver as _deliver
from ._internal.decode import drop as _drop
from ._internal.decode import notification_params
from ._internal.decode import why as _why
from ._internal.inbox import INF as _INF
from ._internal.inbox import AnyInbox
from ._internal.inbox import AsyncInbox as _AsyncInbox
from ._internal.inbox import Closed as _Closed
from ._internal.inbox import Inbox as _Inbox  # noqa: F401
from ._internal.inbox import Pending as _Pending
from ._internal.inbox import Response as _Response
from .models import (
    PROTOCOL_VERSION,
    InitializeResponse,
    Notification,
    SessionCancelResponse,
    SessionPromptResponse,
    TextBlock,
)

__all__ = ["HarnessClient", "NotificationSubscription", "NotificationCallback", "NotificationFilter"]

log = logging.getLogger("deepseek_harness")
bridge_log = logging.getLogger("deepseek_harness.bridge")

STDERR_TAIL_LINES = 400
READ_SIZE = 1 << 16

NotificationCallback = Callable[[Notification], None]
NotificationFilter = Union[None, str, Collection[str], Callable[[Notification], bool]]

# ---------------------------------------------------------------------------
# Subscriptions
# ---------------------------------------------------------------------------


class NotificationSubscription:
    """A stream of notifications, filled by the reader thread, read by any thread.

    Iterate it (blocks until the subscription or the transport is closed), or call
    :meth:`get` with a timeout, or :meth:`drain` for what has arrived so far. Close it when
    done (or use it as a context manager): an open subscription keeps everything it matched.
    """

    def __init__(
        self,
        client: "HarnessClient",
        predicate: Optional[Callable[[Notification], bool]],
        session_id: Optional[str] = None,
    ) -> None:
        self._client = client
        self._predicate = predicate
        #: For session subscriptions: the session and every child learnt from subagent.started.
        self.session_ids: Optional[Set[str]] = {session_id} if session_id is not None else None
        self._items: Deque[Optional[Notification]] = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._closed = False

    # Called on the reader thread.
    def _offer(self, n: Notification) -> None:
        ids = self.session_ids
        if ids is not None:
            if not _belongs(n, ids):
                return
        elif self._predicate is not None:
            try:
                if not self._predicate(n):
                    return
            except Exception:  # a broken filter must not break the reader
                log.exception("notification filter raised; treating it as no match")
                return
        with self._cond:
            if self._closed:
                return
            self._items.append(n)
            self._cond.notify()

    def _end(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def get(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification; None on timeout, or once closed and drained."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                if self._closed:
                    return None
                if deadline is None:
                    self._cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(remaining)
            return self._items.popleft()

    def drain(self) -> List[Notification]:
        """Everything that has arrived and not been read yet, without blocking."""
        with self._cond:
            out = [n for n in self._items if n is not None]
            self._items.clear()
            return out

    def __iter__(self) -> Iterator[Notification]:
        while True:
            n = self.get()
            if n is None:
                return
            yield n

    def close(self) -> None:
        """Stops receiving (what was received stays readable)."""
        self._client._unsubscribe(self)
        self._end()

    def __enter__(self) -> "NotificationSubscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _belongs(n: Notification, ids: Set[str]) -> bool:
    p = n.payload
    sid = p.get("sessionId")
    if sid is not None:
        return type(sid) is str and sid in ids
    # Ids that are not strings (unhashable lists, dicts) belong to nobody.
    parent, child = p.get("parentSessionId"), p.get("childSessionId")
    return (type(parent) is str and parent in ids) or (type(child) is str and child in ids)


def _make_predicate(filter: NotificationFilter) -> Optional[Callable[[Notification], bool]]:
    if filter is None:
        return None
    if isinstance(filter, str):
        name = filter
        return lambda n: n.method == name
    if callable(filter):
        return filter
    names = frozenset(filter)
    return lambda n: n.method in names


# ---------------------------------------------------------------------------
# Live clients, reaped at exit
# ---------------------------------------------------------------------------

_live_clients: "weakref.WeakSet[HarnessClient]" = weakref.WeakSet()


def _reap_at_exit() -> None:
    for client in list(_live_clients):
        try:
            client.close()
        except Exception:  # pragma: no cover - best effort at interpreter exit
            pass


atexit.register(_reap_at_exit)


def _level_of(line: str) -> int:
    """The logging level of a bridge stderr line (``harness-bridge <level>: ...``)."""
    head = line[:40].lower()
    if "error" in head or "fatal" in head:
        return logging.ERROR
    if "warn" in head:
        return logging.WARNING
    if "debug" in head or "trace" in head:
        return logging.DEBUG
    return logging.INFO


# ---------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------


class HarnessClient:
    """Runs ``harness-bridge --stdio`` and talks JSON-RPC 2.0 to it. Thread-safe.

    Args:
        bridge_bin: path of the executable; default: found by :func:`find_bridge_binary`
            (``HARNESS_BRIDGE_BIN``, the bundled binary, ``PATH``; a development checkout
            only with ``HARNESS_BRIDGE_DEV_CHECKOUT=1``).
        session_root: passed as ``--session-root DIR`` (where durable session logs go);
            default: the bridge's own default.
        log_level: passed as ``--log-level LEVEL``; default: the bridge's default.
        max_steps: passed as ``--max-steps N`` (a ceiling); default: none.
        permission_mode: passed as ``--permission-mode MODE`` (a ceiling); default: none.
        extra_args: more command-line arguments, appended last.
        env: variables added to the caller's environment for the child; ``NODE_OPTIONS`` is
            never inherited (it is passed only when given here explicitly).
        cwd: working directory of the child process; default: the caller's.
        request_timeout_seconds: default timeout of every request; None (default) waits
            as long as the bridge lives. A timed-out ``session/prompt`` is cancelled.
        shutdown_timeout_seconds: how long each step of :meth:`close` waits (the ``shutdown``
            request, then the exit after stdin closes, then the exit after SIGTERM).
            Default 5 s.
    """

    def __init__(
        self,
        bridge_bin: Optional[Union[str, "os.PathLike[str]"]] = None,
        *,
        session_root: Optional[Union[str, "os.PathLike[str]"]] = None,
        log_level: Optional[str] = None,
        max_steps: Optional[int] = None,
        permission_mode: Optional[str] = None,
        extra_args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        request_timeout_seconds: Optional[float] = None,
        shutdown_timeout_seconds: float = 5.0,
    ) -> None:
        self.bridge_bin = bridge_bin
        self.session_root = session_root
        self.log_level = log_level
        self.max_steps = max_steps
        self.permission_mode = permission_mode
        self.extra_args = list(extra_args)
        self.env = dict(env) if env else {}
        self.cwd = cwd
        self.request_timeout_seconds = request_timeout_seconds
        self.shutdown_timeout_seconds = shutdown_timeout_seconds

        #: The resolved executable, once started.
        self.bridge_path: Optional[Path] = None
        #: The ``initialize`` result, once initialized.
        self.initialize_response: Optional[InitializeResponse] = None

        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._stdin: Optional[io.BufferedWriter] = None
        self._reader: Optional[threading.Thread] = None
        self._stderr_thread: Optional[threading.Thread] = None
        self._stderr_tail: Deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)

        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # pending, routes, subscriptions, state
        self._write_lock = threading.Lock()
        self._lifecycle_lock = threading.Lock()
        self._pending: Dict[int, _Pending] = {}
        # session id → prompts in flight for it (oldest first); children map to their parent's prompt.
        self._routes: Dict[str, List[_Pending]] = {}
        self._subscriptions: tuple = ()
        self._closed_error: Optional[TransportClosedError] = None
        self._closing = False
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    @property
    def started(self) -> bool:
        return self._started

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    @property
    def process(self) -> Optional["subprocess.Popen[bytes]"]:
        """The bridge process (for diagnostics)."""
        return self._proc

    @property
    def stderr_tail(self) -> List[str]:
        """The last lines (at most 400) the bridge wrote to stderr."""
        return list(self._stderr_tail)

    def command(self) -> List[str]:
        """The command line the bridge is (or will be) started with."""
        path = self.bridge_path or find_bridge_binary(self.bridge_bin, self._child_env(), self.cwd)
        args = [str(path), "--stdio"]
        if self.session_root is not None:
            args += ["--session-root", os.fspath(self.session_root)]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        if self.max_steps is not None:
            args += ["--max-steps", str(self.max_steps)]
        if self.permission_mode is not None:
            args += ["--permission-mode", self.permission_mode]
        return args + self.extra_args

    def _child_env(self) -> Dict[str, str]:
        env = dict(os.environ)
        env.pop("NODE_OPTIONS", None)
        env.update(self.env)
        return env

    def start(self) -> "HarnessClient":
        """Finds the binary and spawns the bridge. Idempotent."""
        with self._lifecycle_lock:
            if self._started:
                return self
            if self._closing:
                raise TransportClosedError("the client was closed; create a new one")
            env = self._child_env()
            self.bridge_path = find_bridge_binary(self.bridge_bin, env, self.cwd)
            cmd = self.command()
            log.debug("starting %s", cmd)
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    cwd=self.cwd,
                    bufsize=0,
                )
            except OSError as exc:
                raise TransportClosedError(f"could not start {cmd[0]}: {exc}") from exc
            self._proc = proc
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            self._stdin = io.BufferedWriter(proc.stdin, buffer_size=1 << 16)  # type: ignore[arg-type]
            self._stderr_thread = threading.Thread(
                target=self._drain_stderr, args=(proc.stderr,), name="harness-bridge-stderr", daemon=True
            )
            self._reader = threading.Thread(
                target=self._read_loop, args=(proc.stdout,), name="harness-bridge-reader", daemon=True
            )
            self._stderr_thread.start()
            self._reader.start()
            self._started = True
            _live_clients.add(self)
            return self

    def close(self) -> None:
        """Stops the bridge: ``shutdown`` (with a timeout) → close stdin → wait → SIGTERM →
        wait → SIGKILL. Idempotent; safe from any thread. Pending requests fail with
        :class:`TransportClosedError` if the bridge did not answer them first."""
        with self._lifecycle_lock:
            if self._closing:
                return
            self._closing = True
            proc = self._proc
        _live_clients.discard(self)
        if proc is None:
            self._fail_all(TransportClosedError("the client was closed"))
            return
        timeout = self.shutdown_timeout_seconds
        if self._closed_error is None and proc.poll() is None:
            try:
                self._request("shutdown", None, timeout=timeout, allow_closing=True)
            except HarnessError as exc:
                log.debug("shutdown request failed: %s", exc)
        try:
            if self._stdin is not None:
                with self._write_lock:
                    self._stdin.close()
        except OSError:
            pass
        if not _wait(proc, timeout):
            log.warning("harness-bridge did not exit %g s after stdin closed; sending SIGTERM", timeout)
            try:
                proc.terminate()
            except OSError:
                pass
            if not _wait(proc, timeout):
                log.warning("harness-bridge ignored SIGTERM for %g s; sending SIGKILL", timeout)
                try:
                    proc.kill()
                except OSError:
                    pass
                proc.wait()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout)
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout)
        self._fail_all(TransportClosedError("the client was closed", proc.returncode, self.stderr_tail))
        for stream in (proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def __enter__(self) -> "HarnessClient":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def initialize(
        self,
        cwd: Union[str, "os.PathLike[str]"],
        provider: str,
        model: str,
        max_tokens: Optional[int] = None,
        max_steps: Optional[int] = None,
        permission_mode: Optional[str] = None,
        tools: Optional[Sequence[str]] = None,
        instructions: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
    ) -> InitializeResponse:
        """Sends ``initialize``; checks the protocol version (raises :class:`ProtocolError`
        on a mismatch) and warns when the bridge's version differs from the SDK's."""
        params: Dict[str, Any] = {
            "cwd": os.path.abspath(os.fspath(cwd)),
            "provider": provider,
            "model": model,
            "protocolVersion": PROTOCOL_VERSION,
        }
        if max_tokens is not None:
            params["maxTokens"] = max_tokens
        if max_steps is not None:
            params["maxSteps"] = max_steps
        if permission_mode is not None:
            params["permissionMode"] = permission_mode
        if tools is not None:
            params["tools"] = list(tools)
        if instructions is not None:
            params["instructions"] = instructions
        result = self._request("initialize", params, timeout=timeout)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"harness-bridge speaks protocol version {version!r}, this SDK speaks "
                f"{PROTOCOL_VERSION}: install matching versions of deepseek-harness and "
                f"harness-bridge (the SDK is {__version__}; bridge at {self.bridge_path})"
            )
        response = _validate(InitializeResponse, result, "initialize")
        server_version = response.server_info.version
        if __version__ != UNKNOWN_VERSION and server_version != __version__:
            warnings.warn(
                f"harness-bridge {server_version} (at {self.bridge_path}) differs from "
                f"deepseek-harness {__version__}",
                RuntimeWarning,
                stacklevel=2,
            )
        self.initialize_response = response
        return response

    def session_prompt(
        self,
        session_id: str,
        content_blocks: Union[str, Iterable[Union[Mapping[str, Any], TextBlock]]],
        on_notification: Optional[NotificationCallback] = None,
        *,
        timeout: Optional[float] = None,
        _keep_chunk: Optional[NotificationCallback] = None,
    ) -> SessionPromptResponse:
        """Runs one turn and returns its settled ``{status, reason}``.

        ``content_blocks`` is a list of text blocks (dicts or :class:`TextBlock`), or a string
        for a single text block. ``on_notification`` is called, on this thread, with every
        notification of the session and its subagents, in stream order, and all of those
        written before the response have been delivered when this returns. If it raises, the
        turn is cancelled on the bridge and the exception is re-raised here once the turn has
        settled. On timeout (``timeout``, else ``request_timeout_seconds``) the turn is
        cancelled and :class:`RequestTimeoutError` is raised.

        ``_keep_chunk`` is the SDK's own: ``assistant/chunk`` notifications go to it undecoded
        instead of to ``on_notification`` (see :func:`_deliver`).
        """
        call = _PromptCall(self, session_id, content_blocks, timeout)
        while True:
            batch = call.next_batch()
            if batch is None:
                assert call.response is not None
                return call.response
            if on_notification is not None:
                try:
                    _deliver(batch, on_notification, _keep_chunk)
                except BaseException:
                    # Whatever the callback raised: cancel the turn, let it settle, re-raise.
                    call.abort()
                    raise

    async def _asession_prompt(
        self,
        session_id: str,
        content_blocks: Union[str, Iterable[Union[Mapping[str, Any], TextBlock]]],
        on_notification: Optional[NotificationCallback] = None,
        *,
        timeout: Optional[float] = None,
        _keep_chunk: Optional[NotificationCallback] = None,
    ) -> SessionPromptResponse:
        """:meth:`session_prompt` for the asyncio front: awaits instead of blocking, and calls
        ``on_notification`` on the event loop. Cancelling the awaiting task cancels the turn,
        waits until it has settled, then lets ``CancelledError`` propagate."""
        call = _PromptCall(self, session_id, content_blocks, timeout, _AsyncInbox(asyncio.get_running_loop()))
        while True:
            batch = await call.anext_batch()
            if batch is None:
                assert call.response is not None
                return call.response
            if on_notification is not None:
                try:
                    _deliver(batch, on_notification, _keep_chunk)
                except BaseException:
                    await call.aabort()
                    raise

    def session_cancel(self, session_id: str, *, timeout: Optional[float] = None) -> bool:
        """Cancels the session's turn in flight; True when there was one (it has settled
        ``aborted`` when this returns), False otherwise."""
        result = self._request("session/cancel", {"sessionId": session_id}, timeout=timeout)
        return _validate(SessionCancelResponse, result, "session/cancel").cancelled

    async def _asession_cancel(self, session_id: str, *, timeout: Optional[float] = None) -> bool:
        """:meth:`session_cancel` for the asyncio front."""
        result = await self._arequest("session/cancel", {"sessionId": session_id}, timeout=timeout)
        return _validate(SessionCancelResponse, result, "session/cancel").cancelled

    def shutdown(self, *, timeout: Optional[float] = None) -> None:
        """Sends ``shutdown`` only (the process then exits); :meth:`close` does this and more."""
        self._request("shutdown", None, timeout=timeout)

    # ------------------------------------------------------------------ subscriptions

    def subscribe_notifications(self, filter: NotificationFilter = None) -> NotificationSubscription:
        """Every notification from now on, or those matching ``filter``: a method name, a
        collection of method names, or a predicate (it runs on the reader thread, so keep it
        quick; an exception counts as no match)."""
        sub = NotificationSubscription(self, _make_predicate(filter))
        self._subscribe(sub)
        return sub

    def subscribe_session_notifications(self, session_id: str) -> NotificationSubscription:
        """The notifications of one session and, as ``subagent.started`` reveals them, of its
        child sessions (recursively)."""
        sub = NotificationSubscription(self, None, session_id)
        self._subscribe(sub)
        return sub

    def _subscribe(self, sub: NotificationSubscription) -> None:
        with self._lock:
            if self._closed_error is not None:
                sub._end()
                return
            self._subscriptions = self._subscriptions + (sub,)

    def _unsubscribe(self, sub: NotificationSubscription) -> None:
        with self._lock:
            self._subscriptions = tuple(s for s in self._subscriptions if s is not sub)

    # ------------------------------------------------------------------ plumbing

    def _send(self, method: str, params: Optional[Dict[str, Any]], session_id: Optional[str] = None,
              allow_closing: bool = False, inbox: Optional[AnyInbox] = None) -> _Pending:
        """Registers a waiter and writes the request. The write happens on the caller's thread
        (for the asyncio front: on the loop); requests are small and the bridge reads stdin
        continuously, so it does not block in practice."""
        if not self._started:
            raise HarnessError("the client is not started: call start() first")
        request_id = next(self._ids)
        pending = _Pending(request_id, method, session_id, inbox)
        frame: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        data = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._lock:
            if self._closed_error is not None:
                raise self._closed_error
            reader = self._reader
            if reader is not None and not reader.is_alive():
                raise self._transport_error("the SDK's reader thread is not running: close this client and start a new one")
            if self._closing and not allow_closing:
                raise TransportClosedError("the client is closing")
            self._pending[request_id] = pending
            if session_id is not None:
                self._routes.setdefault(session_id, []).append(pending)
        try:
            with self._write_lock:
                assert self._stdin is not None
                self._stdin.write(data)
                self._stdin.flush()
        except (OSError, ValueError) as exc:
            self._forget(pending)
            raise self._transport_error(f"could not write to harness-bridge: {exc}") from exc
        return pending

    def _try_cancel(self, session_id: str, inbox: Optional[AnyInbox] = None) -> Optional[_Pending]:
        try:
            return self._send("session/cancel", {"sessionId": session_id}, inbox=inbox)
        except HarnessError as exc:
            log.debug("could not cancel session %s: %s", session_id, exc)
            return None

    def _request(self, method: str, params: Optional[Dict[str, Any]], *, timeout: Optional[float] = None,
                 allow_closing: bool = False) -> Any:
        if timeout is None:
            timeout = self.request_timeout_seconds
        pending = self._send(method, params, allow_closing=allow_closing)
        deadline = _INF if timeout is None else time.monotonic() + timeout
        try:
            item = pending.inbox.get(deadline)
        except TimeoutError:
            self._forget(pending)
            assert timeout is not None
            raise RequestTimeoutError(method, timeout) from None
        except BaseException:
            self._forget(pending)
            raise
        if type(item) is _Closed:
            raise item.error
        return self._result_of(item.frame, method)

    async def _arequest(self, method: str, params: Optional[Dict[str, Any]], *, timeout: Optional[float] = None) -> Any:
        """:meth:`_request` for the asyncio front (a cancelled task just drops its waiter)."""
        if timeout is None:
            timeout = self.request_timeout_seconds
        pending = self._send(method, params, inbox=_AsyncInbox(asyncio.get_running_loop()))
        deadline = _INF if timeout is None else time.monotonic() + timeout
        try:
            item = await pending.inbox.aget(deadline)
        except TimeoutError:
            self._forget(pending)
            assert timeout is not None
            raise RequestTimeoutError(method, timeout) from None
        except BaseException:
            self._forget(pending)
            raise
        if type(item) is _Closed:
            raise item.error
        return self._result_of(item.frame, method)

    def _await_quietly(self, pending: _Pending, timeout: float) -> None:
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

    def _forget(self, pending: _Pending) -> None:
        with self._lock:
            self._pending.pop(pending.id, None)
            self._unroute(pending)

    def _unroute(self, pending: _Pending) -> None:
        # Caller holds self._lock.
        for sid in pending.session_ids:
            routes = self._routes.get(sid)
            if routes is not None:
                try:
                    routes.remove(pending)
                except ValueError:
                    pass
                if not routes:
                    del self._routes[sid]

    def _transport_error(self, reason: str) -> TransportClosedError:
        if self._closed_error is not None:
            return self._closed_error
        code = self._proc.poll() if self._proc is not None else None
        return TransportClosedError(reason, code, self.stderr_tail)

    def _fail_all(self, error: TransportClosedError) -> None:
        with self._lock:
            if self._closed_error is None:
                self._closed_error = error
            error = self._closed_error
            pending = list(self._pending.values())
            self._pending.clear()
            self._routes.clear()
            subs = self._subscriptions
            self._subscriptions = ()
        for p in pending:
            p.inbox.put(_Closed(error))
        for s in subs:
            s._end()

    # ------------------------------------------------------------------ threads

    def _read_loop(self, stdout: Any) -> None:
        """Reads stdout in blocks, splits lines itself (no length limit: a long line is
        collected in pieces and joined once), and hands each block's notifications to their
        inboxes as one batch: one wake-up of the consumer per block, not per notification."""
        read = stdout.read
        parts: List[bytes] = []  # pieces of an unterminated line
        try:
            while True:
                try:
                    data = read(READ_SIZE)
                except (OSError, ValueError) as exc:  # ValueError: close() closed the pipe
                    log.debug("reading harness-bridge stdout failed: %s", exc)
                    break
                if not data:
                    break
                nl = data.rfind(b"\n")
                if nl < 0:
                    parts.append(data)
                    continue
                if parts:
                    parts.append(data[: nl + 1])
                    block = b"".join(parts)
                    parts = []
                else:
                    block = data[: nl + 1] if nl + 1 < len(data) else data
                if nl + 1 < len(data):
                    parts.append(data[nl + 1 :])
                self._dispatch(block.split(b"\n"))
            if parts:
                self._dispatch([b"".join(parts)])
        except BaseException as exc:
            # Invariant: no waiter outlives the reader. Whatever killed it (a bug, a frame no
            # guard foresaw), every pending call and every later one fails at once, naming it.
            log.error("the harness-bridge reader thread failed; failing every call", exc_info=True)
            self._fail_all(self._transport_error(
                f"the SDK's reader thread failed ({type(exc).__name__}: {exc}); this client "
                f"cannot be used any more: close it and start a new one"))
            raise
        self._on_eof()

    def _dispatch(self, lines: List[bytes]) -> None:
        """Routes the frames of one block, in order. Runs on the reader thread only."""
        loads = json.loads
        routes = self._routes
        batches: Dict[_Pending, List[Notification]] = {}
        subs = self._subscriptions
        for line in lines:
            if not line:
                continue
            if not subs and line.startswith(_FAST_PREFIX):
                end = line.find(b'"', _FAST_LEN)
                if end > 0 and b"\\" not in line[_FAST_LEN:end]:
                    targets = routes.get(line[_FAST_LEN:end].decode("utf-8", "replace"))
                    if targets:
                        try:
                            owner = targets[0]
                        except IndexError:
                            continue
                        batch = batches.get(owner)
                        if batch is None:
                            batches[owner] = [line]
                        else:
                            batch.append(line)
                    continue
            try:
                msg = loads(line)
            except _DECODE_ERRORS as exc:
                if line.strip():
                    log.warning("dropping a line that cannot be decoded (%s): %r", _why(exc), line[:200])
                continue
            params = notification_params(msg)
            if params is not None:
                method = msg["method"]
                sid = params.get("sessionId")
                if sid is not None and type(sid) is not str:
                    # An unhashable id would raise in the route lookup and kill this thread.
                    log.warning("dropping a notification whose sessionId is not a string: %r", line[:200])
                    continue
                n = Notification(method, params)
                if sid is not None:
                    targets = routes.get(sid)
                    if targets:
                        try:
                            owner = targets[0]
                        except IndexError:  # the prompt settled meanwhile
                            owner = None
                        if owner is not None:
                            batch = batches.get(owner)
                            if batch is None:
                                batches[owner] = [n]
                            else:
                                batch.append(n)
                else:
                    owner = self._route_subagent(n, params)
                    if owner is not None:
                        batches.setdefault(owner, []).append(n)
                if subs:
                    if method == "subagent.started":
                        _learn_child(subs, params)
                    for sub in subs:
                        sub._offer(n)
                continue
            if type(msg) is dict and msg.get("method") is None and ("result" in msg or "error" in msg):
                request_id = msg.get("id")
                pending = None
                if type(request_id) is int:
                    with self._lock:
                        pending = self._pending.pop(request_id, None)
                        if pending is not None:
                            self._unroute(pending)
                if pending is None:
                    if request_id is None and "error" in msg:
                        log.warning("harness-bridge reported an error for no request: %r", msg.get("error"))
                    else:
                        log.debug("dropping a response for no pending request: id=%r", request_id)
                    continue
                # Everything read before this response goes out first.
                if batches:
                    for owner, batch in batches.items():
                        owner.inbox.put(batch)
                    batches = {}
                pending.inbox.put(_Response(msg))
                continue
            _drop(line, msg)
        for owner, batch in batches.items():
            owner.inbox.put(batch)

    def _route_subagent(self, n: Notification, params: Dict[str, Any]) -> Optional[_Pending]:
        parent = params.get("parentSessionId")
        child = params.get("childSessionId")
        with self._lock:
            targets = self._routes.get(parent) if isinstance(parent, str) else None
            if not targets:
                return None
            owner = targets[0]
            if n.method == "subagent.started" and isinstance(child, str) and child not in owner.session_ids:
                owner.session_ids.add(child)
                self._routes.setdefault(child, []).append(owner)
        return owner

    def _on_eof(self) -> None:
        proc = self._proc
        code: Optional[int] = None
        if proc is not None:
            _wait(proc, 2.0)
            code = proc.poll()
        if self._stderr_thread is not None and self._stderr_thread is not threading.current_thread():
            self._stderr_thread.join(2.0)
        reason = "the client was closed" if self._closing else "harness-bridge exited"
        self._fail_all(TransportClosedError(reason, code, self.stderr_tail))

    def _drain_stderr(self, stderr: Any) -> None:
        tail = self._stderr_tail
        try:
            for raw in iter(stderr.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                tail.append(line)
                if line:
                    bridge_log.log(_level_of(line), "%s", line)
        except (OSError, ValueError):
            pass


class _PromptCall:
    """One ``session/prompt`` in flight, seen from its consumer.

    The reader thread fills the request's inbox with batches of notifications (decoded
    :class:`Notification` objects, or raw fast-path lines: see :func:`_deliver`) and finally
    the response. The consumer pulls them in that order with :meth:`next_batch` (blocking, for
    an :class:`_Inbox`) or :meth:`anext_batch` (awaiting, for an :class:`_AsyncInbox`); both
    return ``None`` once the turn has settled, with :attr:`response` set. A consumer that gives
    up (a callback raised, a stream was closed, a task was cancelled, the timeout passed) calls
    :meth:`abort` / :meth:`aabort`: ``session/cancel``, then wait, bounded by the client's
    ``shutdown_timeout_seconds``, until the prompt and the cancel have both been answered, so
    the session is idle (reusable) afterwards.
    """

    __slots__ = ("client", "session_id", "pending", "timeout", "deadline", "response", "settled")

    def __init__(
        self,
        client: "HarnessClient",
        session_id: str,
        content_blocks: Union[str, Iterable[Union[Mapping[str, Any], TextBlock]]],
        timeout: Optional[float] = None,
        inbox: Optional[AnyInbox] = None,
    ) -> None:
        blocks = _content_blocks(content_blocks)
        if timeout is None:
            timeout = client.request_timeout_seconds
        self.client = client
        self.session_id = session_id
        self.timeout = timeout
        self.response: Optional[SessionPromptResponse] = None
        #: True once the consumer is done with the inbox: answered, aborted or abandoned.
        self.settled = False
        self.pending = client._send("session/prompt", {"sessionId": session_id, "contentBlocks": blocks}, session_id,
                                    inbox=inbox)
        self.deadline = _INF if timeout is None else time.monotonic() + timeout

    # -- shared ------------------------------------------------------------------------

    def _settle(self, item: Any) -> None:
        self.settled = True
        if type(item) is _Closed:
            raise item.error
        result = self.client._result_of(item.frame, "session/prompt")
        self.response = _validate(SessionPromptResponse, result, "session/prompt")

    def _timeout_error(self) -> RequestTimeoutError:
        assert self.timeout is not None
        return RequestTimeoutError("session/prompt", self.timeout, "the turn was cancelled")

    def _abandon(self) -> None:
        """Interrupted while waiting (e.g. KeyboardInterrupt): drop the waiter, ask the bridge to
        cancel, and do not wait for anything."""
        if self.settled:
            return
        self.settled = True
        self.client._forget(self.pending)
        self.client._try_cancel(self.session_id)

    # -- blocking front ----------------------------------------------------------------

    def next_batch(self) -> Optional[List[Any]]:
        """The next batch (see :func:`_deliver`), or None once the response has arrived."""
        try:
            item = self.pending.inbox.get(self.deadline)
        except TimeoutError:
            self.abort()
            raise self._timeout_error() from None
        except BaseException:
            self._abandon()
            raise
        if type(item) is list:
            return item
        self._settle(item)
        return None

    def abort(self) -> None:
        """Cancels the turn and waits (bounded) until it has settled; what arrives meanwhile is
        dropped. Idempotent; a no-op once the turn has settled."""
        if self.settled:
            return
        self.settled = True
        client = self.client
        cancel = client._try_cancel(self.session_id)
        wait = client.shutdown_timeout_seconds
        deadline = time.monotonic() + wait
        try:
            while type(self.pending.inbox.get(deadline)) is list:
                pass
        except TimeoutError:
            client._forget(self.pending)
            if cancel is not None:
                client._forget(cancel)
            return
        if cancel is not None:
            client._await_quietly(cancel, wait)

    # -- asyncio front -----------------------------------------------------------------

    async def anext_batch(self) -> Optional[List[Any]]:
        """:meth:`next_batch`, awaiting. A cancelled task cancels the turn and waits until it
        has settled before ``CancelledError`` propagates."""
        try:
            item = await self.pending.inbox.aget(self.deadline)
        except TimeoutError:
            await self.aabort()
            raise self._timeout_error() from None
        except asyncio.CancelledError:
            await self.aabort()
            raise
        except BaseException:
            self._abandon()
            raise
        if type(item) is list:
            return item
        self._settle(item)
        return None

    async def aabort(self) -> None:
        """:meth:`abort`, awaiting. A further cancellation of the task while it waits does not
        cut the wait short (the wait is bounded anyway): it is re-raised once the turn settled."""
        if self.settled:
            return
        self.settled = True
        client = self.client
        cancel = client._try_cancel(self.session_id, _AsyncInbox(asyncio.get_running_loop()))
        wait = client.shutdown_timeout_seconds
        cancelled_again = False
        for pending in (self.pending, cancel):
            if pending is None:
                continue
            deadline = time.monotonic() + wait
            answered = False
            while not answered:
                try:
                    answered = type(await pending.inbox.aget(deadline)) is not list
                except asyncio.CancelledError:
                    cancelled_again = True
                except TimeoutError:
                    break
            if not answered:  # the bridge did not settle in time: stop waiting for it at all
                client._forget(self.pending)
                if cancel is not None:
                    client._forget(cancel)
                break
        if cancelled_again:
            raise asyncio.CancelledError


def _learn_child(subs: Iterable[NotificationSubscription], params: Dict[str, Any]) -> None:
    parent = params.get("parentSessionId")
    child = params.get("childSessionId")
    if not isinstance(child, str) or not isinstance(parent, str):
        return
    for s in subs:
        ids = s.session_ids
        if ids is not None and parent in ids:
            ids.add(child)


def _wait(proc: "subprocess.Popen[bytes]", timeout: float) -> bool:
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _content_blocks(blocks: Union[str, Iterable[Union[Mapping[str, Any], TextBlock]]]) -> List[Dict[str, Any]]:
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    out: List[Dict[str, Any]] = []
    for b in blocks:
        if isinstance(b, TextBlock):
            out.append(b.to_wire())
        elif isinstance(b, Mapping):
            out.append(dict(b))
        else:
            raise TypeError(f"a content block must be a dict or TextBlock, not {type(b).__name__}")
    return out


def _validate(model: Any, value: Any, method: str) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ProtocolError(f"malformed {method} result from harness-bridge: {exc}") from exc

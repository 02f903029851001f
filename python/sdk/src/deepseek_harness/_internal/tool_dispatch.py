"""Answering the bridge's ``tool/request``, ``permission/request`` and ``hook/request`` events
(client tools, approvals and hooks; docs/PROTOCOL.md "Client tools and approvals", "Hooks").

The reader thread sees such an event (:meth:`ToolDispatcher.handle`, through the router's
interceptor) and only hands it on, so it never blocks and never writes to the bridge (a write
could wait on a full pipe while the bridge waits on us to read). Where the work runs:

* a sync function (tool or ``can_use_tool``) on the harness's worker pool, which then sends the
  answer itself (a blocking request on that worker thread);
* an ``async`` function on the event loop of the prompt it belongs to (the async harness), as a
  task that awaits it and then the answer;
* an ``async`` function with no loop (the blocking harness) on a worker, in ``asyncio.run``: a
  fresh event loop per call.

Every job ends in exactly one answer, whatever the function does: its result, an error result
(bad arguments, an exception), or a deny (an approval callback that raised or returned
something else). A job whose turn is over (cancelled, timed out, the bridge gone) gets a refusal
for its answer, which is logged at debug level: nobody is waiting for it any more. When a
prompt settles, the async jobs of its sessions are cancelled; a sync function cannot be
interrupted, so it runs to its end and its answer is dropped the same way.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
import weakref
from typing import Any, Callable, Dict, Optional, Sequence, Set, Tuple

from ..client_tools import ClientTool
from ..errors import HarnessError, UnsendableRequestError
from ..hooks import Hooks
from ..notification import Notification
from ..wire import PermissionRequestEvent
from .connection import Connection, answer_requests, arequest, line_limit, request
from .forking import renew_locks_in_child
from .hook_dispatch import hook_job
from .inbox import AsyncInbox, Pending
from .tool_answers import (
    Answer, Unanswerable, answer_budget, answered, ask, call_tool, permission_answer, tool_answer,
)
from .worker_pool import DaemonPool

__all__ = ["ToolDispatcher", "POOL_THREAD_PREFIX"]

log = logging.getLogger("deepseek_harness")

#: The worker threads' name prefix (sync tools and callbacks run there, never on the reader).
POOL_THREAD_PREFIX = "deepseek-harness-tool"

#: The most sync tools running at once (threads are started as jobs come, up to this). Sized
#: for tools that wait on I/O across many sessions of one harness, not for CPU work.
POOL_WORKERS = 32
#: The most sync approval callbacks running at once: a pool of their own, so that decisions never
#: wait behind tools (a tool that runs a prompt on the same harness holds its worker meanwhile).
APPROVAL_WORKERS = 8
#: The most sync hook functions running at once: their own pool too, for the same reason.
HOOK_WORKERS = 8

#: Threads for the jobs of prompts run from inside sync tools (see `handle`): a bound only
#: against runaway recursion, far above any nesting a program means.
NESTED_WORKERS = 1024

# How long a worker waits for the bridge to acknowledge an answer: it answers at once, so this
# only bounds a bridge that stopped reading.
ANSWER_TIMEOUT_SECONDS = 30.0


class ToolDispatcher:
    """Runs the client tools and the approval callback of one harness. Thread-safe."""

    def __init__(self, conn: Connection, tools: Sequence[ClientTool],
                 can_use_tool: Optional[Callable[[PermissionRequestEvent], Any]],
                 hooks: Optional[Hooks] = None) -> None:
        self.conn = conn
        self.hooks = hooks
        self.tools: Dict[str, ClientTool] = {t.name: t for t in tools}
        self.can_use_tool = can_use_tool
        self._lock = threading.Lock()
        self._pools: Dict[str, DaemonPool] = {}
        self._closed = False
        # session id → how many of its prompts settled while it had jobs: a job remembers the count
        # it was handed under and does not start once it moved (its turn is over: nobody waits).
        # Both maps hold only sessions with jobs outstanding (a long-lived harness serves many).
        self._settled: Dict[str, int] = {}
        self._outstanding: Dict[str, int] = {}
        # session id → the asyncio tasks answering its events, with their loops.
        self._tasks: Dict[str, Set[Tuple[asyncio.AbstractEventLoop, "asyncio.Task[None]"]]] = {}
        # The tasks this dispatcher cancelled (`_cancel`): only their CancelledError means "nobody
        # waits for an answer"; one raised out of the user's coroutine is its failure (Python 3.10
        # has no Task.cancelling() to tell them apart).
        self._cancelled: "weakref.WeakSet[asyncio.Task[None]]" = weakref.WeakSet()
        renew_locks_in_child(self, "_lock")  # a fork's close() takes it (see forking.py)

    def attach(self) -> None:
        answer_requests(self.conn, self.handle, self.settled)

    # -- on the reader thread -------------------------------------------------------------

    def handle(self, n: Notification, owner: Optional[Pending]) -> None:
        """Hands one ``tool/request`` / ``permission/request`` / ``hook/request`` to where it runs."""
        params = n.payload
        sid = params.get("sessionId")
        event = params.get("event")
        data = event.get("data") if isinstance(event, dict) else None
        if not isinstance(sid, str) or not isinstance(event, dict) or not isinstance(data, dict):
            log.warning("ignoring a malformed request event: %r", params)
            return
        fn: Callable[[], Any]
        finish: Callable[[Any, Optional[BaseException]], Answer]
        kind = {"tool/request": "tools", "hook/request": "hooks"}.get(event.get("type"), "approvals")  # type: ignore[arg-type]
        # Every answer is made to fit the line limit of this very bridge (a lower
        # --max-line-bytes included): a line it discards would leave the call waiting.
        budget = answer_budget(line_limit(self.conn))
        if kind == "hooks":
            if self.hooks is None:
                return  # hooks asked for without functions: the caller answers (HarnessClient)
            job = hook_job(self.hooks, sid, n, data, budget)
            if job is None:
                return
            fn, finish, is_async = job
        elif kind == "tools":
            call_id, name, arguments = data.get("callId"), data.get("name"), data.get("arguments", {})
            if not isinstance(call_id, str):
                log.warning("ignoring a tool/request without a callId: %r", data)
                return
            tool = self.tools.get(name) if isinstance(name, str) else None
            fn = functools.partial(call_tool, tool, name, arguments)
            finish = functools.partial(tool_answer, sid, call_id, name, budget=budget)
            is_async = tool is not None and tool.is_async
        else:
            request_id = data.get("requestId")
            if self.can_use_tool is None:
                return  # approvals asked for without a callback: the caller answers (HarnessClient)
            if not isinstance(request_id, str):
                log.warning("ignoring a permission/request without a requestId: %r", data)
                return
            fn = functools.partial(ask, self.can_use_tool, n)
            finish = functools.partial(permission_answer, sid, request_id, budget=budget)
            is_async = _is_async_callable(self.can_use_tool)
        ticket = _Ticket(self, sid)
        loop = owner.inbox.loop if owner is not None and isinstance(owner.inbox, AsyncInbox) else None
        if is_async and loop is not None:
            try:
                loop.call_soon_threadsafe(self._spawn, sid, loop, ticket, fn, finish)
                return
            except RuntimeError:  # the loop is closed: run it on a fresh one below
                pass
        # A prompt run from inside a sync tool waits on its worker: its own jobs get a thread of
        # their own, or nesting deeper than the pool would wait for workers that never come free.
        nested = owner is not None and owner.origin_thread.startswith(POOL_THREAD_PREFIX)
        self._submit("nested" if nested else kind, ticket, fn, finish)

    def settled(self, session_ids: Set[str]) -> None:
        """A prompt of these sessions was answered: its async jobs have nobody left to answer."""
        with self._lock:
            for sid in session_ids:
                if sid in self._outstanding:
                    self._settled[sid] = self._settled.get(sid, 0) + 1
            jobs = [job for sid in session_ids for job in self._tasks.pop(sid, ())]
        for loop, task in jobs:
            self._cancel(loop, task)

    # -- where jobs run ---------------------------------------------------------------------

    def _submit(self, kind: str, ticket: "_Ticket", fn: Callable[[], Any],
                finish: Callable[[Any, Optional[BaseException]], Answer]) -> None:
        with self._lock:
            if self._closed:
                log.debug("the harness is closed; dropping a client tool or approval job")
                return
            pool = self._pools.get(kind)
            if pool is None:
                # Nested jobs: as many threads as nesting levels waiting (each holds its parent's worker).
                size = {"tools": POOL_WORKERS, "approvals": APPROVAL_WORKERS, "hooks": HOOK_WORKERS}.get(kind, NESTED_WORKERS)
                pool = self._pools[kind] = DaemonPool(size, f"{POOL_THREAD_PREFIX}-{kind}")
            pool.submit(functools.partial(self._run_in_thread, ticket, fn, finish))

    def _run_in_thread(self, ticket: "_Ticket", fn: Callable[[], Any],
                       finish: Callable[[Any, Optional[BaseException]], Answer]) -> None:
        try:
            self._run_job(ticket, fn, finish)
        finally:
            ticket.done()

    def _run_job(self, ticket: "_Ticket", fn: Callable[[], Any],
                 finish: Callable[[Any, Optional[BaseException]], Answer]) -> None:
        if not ticket.live():
            log.debug("a client tool or approval job whose turn is over was not started")
            return
        try:
            value = fn()
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
            answer = answered(finish, value, None)
        except BaseException as exc:  # noqa: BLE001 - a worker thread: even sys.exit() in a tool becomes its answer
            answer = answered(finish, None, exc)
        for attempt in _Attempts(answer, finish):
            with attempt:
                request(self.conn, *attempt.answer, timeout=ANSWER_TIMEOUT_SECONDS)

    def _spawn(self, sid: str, loop: asyncio.AbstractEventLoop, ticket: "_Ticket", fn: Callable[[], Any],
               finish: Callable[[Any, Optional[BaseException]], Answer]) -> None:
        """On the loop: starts the task answering one event, unless its turn ended meanwhile (the
        loop was busy and the turn was cancelled: the tool must not run after that)."""
        if not ticket.live():
            log.debug("a client tool or approval job whose turn is over was not started")
            ticket.done()
            return
        task = loop.create_task(self._run_on_loop(fn, finish))
        entry = (loop, task)
        with self._lock:
            self._tasks.setdefault(sid, set()).add(entry)
        task.add_done_callback(functools.partial(self._task_done, sid, entry))
        task.add_done_callback(lambda _task: ticket.done())

    def _task_done(self, sid: str, entry: Tuple[asyncio.AbstractEventLoop, "asyncio.Task[None]"],
                   task: "asyncio.Task[None]") -> None:
        with self._lock:
            tasks = self._tasks.get(sid)
            if tasks is not None:
                tasks.discard(entry)
                if not tasks:
                    del self._tasks[sid]
        if not task.cancelled() and task.exception() is not None:
            log.error("a client tool job failed", exc_info=task.exception())

    async def _run_on_loop(self, fn: Callable[[], Any], finish: Callable[[Any, Optional[BaseException]], Answer]) -> None:
        try:
            value = fn()
            if inspect.isawaitable(value):
                value = await value
            answer = answered(finish, value, None)
        except asyncio.CancelledError as exc:
            if self._cancelled_job():
                raise  # the turn is over or the harness closed: nobody waits for an answer
            # Raised by the user's coroutine (an inner task it awaited was cancelled): a failure
            # like any other, so the job still answers (else the turn waits out its deadline).
            answer = answered(finish, None, exc)
        except BaseException as exc:  # noqa: BLE001 - sys.exit() in a tool is its answer, not the caller's exit
            answer = answered(finish, None, exc)
        for attempt in _Attempts(answer, finish):
            with attempt:
                await arequest(self.conn, *attempt.answer, timeout=ANSWER_TIMEOUT_SECONDS)

    def _cancel(self, loop: asyncio.AbstractEventLoop, task: "asyncio.Task[None]") -> None:
        with self._lock:
            self._cancelled.add(task)
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:
            pass

    def _cancelled_job(self) -> bool:
        """In a job's task: whether the CancelledError being handled is that task's cancellation
        (by this dispatcher, or the loop's teardown), not one the user's coroutine raised."""
        task = asyncio.current_task()
        cancelling = getattr(task, "cancelling", None)  # Python 3.11+
        if cancelling is not None and cancelling() > 0:
            return True
        with self._lock:
            return task in self._cancelled

    def close(self) -> None:
        """Cancels the async jobs and shuts the pools down (queued jobs dropped; a sync function
        already running cannot be stopped: its daemon worker ends when it returns, and never
        holds up the interpreter's exit). Idempotent."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
            self._pools.clear()
            jobs = [job for tasks in self._tasks.values() for job in tasks]
            self._tasks.clear()
        for loop, task in jobs:
            self._cancel(loop, task)
        for pool in pools:
            pool.shutdown()


class _Attempts:
    """Sending one job's answer: the answer, and once more a fallback when it could not be
    written (not JSON, not UTF-8, past the line limit: the caller sees nothing, so the bridge
    must get an error result or a deny). The bridge refusing it (the turn is over) ends the
    attempts quietly."""

    def __init__(self, answer: Answer, finish: Callable[[Any, Optional[BaseException]], Answer]) -> None:
        self.answer = answer
        self._finish = finish
        self._done = False
        self._tries = 0

    def __iter__(self) -> "_Attempts":
        return self

    def __next__(self) -> "_Attempts":
        if self._done or self._tries == 2:
            raise StopIteration
        self._tries += 1
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Optional[BaseException], tb: Any) -> bool:
        method, params = self.answer
        if exc is None or (isinstance(exc, HarnessError) and not isinstance(exc, UnsendableRequestError)):
            if exc is not None:
                log.debug("%s for %s was not taken (the turn is over?): %s", method, params.get("sessionId"), exc)
            self._done = True
            return exc is not None
        if not isinstance(exc, Exception):
            return False  # cancellation, interpreter exit: not ours to swallow
        why = f"{type(exc).__name__} while sending the answer"
        log.warning("%s for %s could not be sent (%s); answering with an error instead", method, params.get("sessionId"), why)
        self.answer = answered(self._finish, None, Unanswerable(why))
        return True


class _Ticket:
    """One job's claim on its session's turn: live while no prompt of the session settled since
    it was handed out; `done` (once) when the job ended or was skipped."""

    def __init__(self, dispatcher: ToolDispatcher, sid: str) -> None:
        self._d = dispatcher
        self._sid = sid
        self._ended = False
        with dispatcher._lock:
            dispatcher._outstanding[sid] = dispatcher._outstanding.get(sid, 0) + 1
            self._generation = dispatcher._settled.get(sid, 0)

    def live(self) -> bool:
        d = self._d
        with d._lock:
            return not d._closed and d._settled.get(self._sid, 0) == self._generation

    def done(self) -> None:
        d = self._d
        with d._lock:
            if self._ended:
                return
            self._ended = True
            left = d._outstanding.get(self._sid, 1) - 1
            if left > 0:
                d._outstanding[self._sid] = left
            else:
                d._outstanding.pop(self._sid, None)
                d._settled.pop(self._sid, None)


async def _awaited(value: Any) -> Any:
    return await value


def _is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))

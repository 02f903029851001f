"""The asyncio surface: :class:`AsyncDeepSeekHarness`, :class:`AsyncSession`, :class:`AsyncTurnStream`.

Design: an asyncio front on the one thread-based core, not a second client.

The bridge is still run by :class:`~deepseek_harness.client.HarnessClient`: its reader thread
frames stdout, routes every frame to the inbox of the request (and session) it belongs to, and
its stderr thread keeps the tail for error messages. What differs per front is only *how the
consumer of an inbox waits*. An async request gets an ``AsyncInbox``: the reader appends to it
exactly as to a blocking one, and wakes the waiting task with ``loop.call_soon_threadsafe`` — at
most once per block read from the pipe, and only while the task is actually parked. The prompt
state machine (settlement on the response, bounded cancel-and-settle when the consumer gives
up, timeouts) is ``PromptCall``, shared by both fronts; results are assembled by the same
``TurnCollector`` and streams by the same ``StreamBuffer`` as the blocking front's
(:mod:`deepseek_harness._internal.turn`).

Why not an asyncio-native core (``asyncio.create_subprocess_exec`` with a reader task)? Then
the blocking API would need a private event loop in a thread, or the protocol code would exist
twice. Reading on a dedicated thread also keeps the pipe drained while the event loop is busy
with the user's own work, and keeps the notification hot path free of per-frame task switches
(the reader batches a whole block per wake-up). The costs are accepted and small: starting the
process and :meth:`AsyncDeepSeekHarness.close` (which waits for the process to exit) run in a
worker thread via :func:`asyncio.to_thread`; writing a request to stdin happens on the loop, and
never blocks it (what the pipe does not take at once is queued and written by a thread).

Cancellation: cancelling a task that awaits :meth:`AsyncSession.run` (or iterates a stream)
sends ``session/cancel``, waits until the turn has settled ``aborted`` (bounded by
``shutdown_timeout_seconds``), then lets ``CancelledError`` propagate — so ``asyncio.timeout``,
``asyncio.wait_for`` and task groups behave, and the session can run its next turn at once.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any, AsyncIterator, Dict, List, Mapping, Optional, Type

from ._internal.output import output_spec
from ._internal.turn import StreamBuffer, TurnCollector
from .api import DeepSeekHarness, new_session_id
from ._internal.decode import NotificationCallback
from ._internal.harness_setup import LogFolder, closed_reason
from ._internal.inbox import AsyncInbox
from ._internal.prompt import PromptCall, PromptInput, acancel, arun_prompt, asettle_abandoned
from ._internal import session_requests as _sessions
from . import checkpoints as _checkpoints
from .client import HarnessClient
from .events import event_from_notification
from . import turn_control as _turn_control
from .options import HarnessOptions, resolve_options
from .results import StreamItem, TurnResult
from .wire import READ_LIMIT_DEFAULT, CheckpointInfo, InitializeResponse, RewindResult, SessionInfo, TurnEvent

__all__ = ["AsyncDeepSeekHarness", "AsyncSession", "AsyncTurnStream"]


class AsyncDeepSeekHarness:
    """:class:`~deepseek_harness.DeepSeekHarness` for asyncio: the same arguments (a
    :class:`~deepseek_harness.HarnessOptions` and keyword arguments overriding its fields), the same
    process, ``run``/``cancel``/``start``/``close`` as coroutines.

    Use it as an async context manager (entering starts the bridge and sends ``initialize``),
    or ``await start()`` / ``await close()``; ``run`` and ``stream`` also start it on first use.
    Any number of sessions may run turns concurrently (``asyncio.gather``, task groups). Use one
    instance from one event loop.
    """

    def __init__(self, options: Optional[HarnessOptions] = None, **overrides: Any) -> None:
        # Configuration, process lifecycle and initialize are the blocking harness's; only the
        # waiting is done differently here.
        self._harness = DeepSeekHarness(resolve_options("AsyncDeepSeekHarness", options, overrides))
        self._harness.client.closed_reason = closed_reason(type(self).__name__)
        # What this front's own turns cost, and where its bridge keeps logs (from session/list).
        self._costs = _turn_control.SessionCosts()
        self._log_folder = LogFolder()
        self._starting: Optional["asyncio.Future[Any]"] = None
        # session id → the prompt of a stream dropped while its turn was in flight, then the
        # task that cancels it and waits for it to settle (see AsyncTurnStream.__del__).
        self._abandoned: Dict[str, Any] = {}

    @property
    def client(self) -> HarnessClient:
        """The underlying :class:`HarnessClient` (shared with nothing else)."""
        return self._harness.client

    @property
    def initialize_response(self) -> Optional[InitializeResponse]:
        return self._harness.initialize_response

    async def start(self) -> "AsyncDeepSeekHarness":
        """Starts the bridge and initializes it (in a worker thread). Idempotent; concurrent
        callers share one start; a failed start closes the bridge and raises to all of them."""
        while self._harness.initialize_response is None:
            task = self._starting
            if task is None:
                task = self._starting = asyncio.ensure_future(asyncio.to_thread(self._harness.start))
                task.add_done_callback(self._start_done)
            # shield: one caller being cancelled must not cancel the start the others wait for.
            await asyncio.shield(task)
        return self

    def _start_done(self, task: "asyncio.Future[Any]") -> None:
        if self._starting is task:
            self._starting = None
        if not task.cancelled():
            task.exception()  # retrieved here; every waiter gets it through its shield

    async def close(self) -> None:
        """Shuts the bridge down (in a worker thread; see :meth:`HarnessClient.close`): turns
        in flight settle ``aborted`` first. Idempotent."""
        await asyncio.to_thread(self._harness.close)

    async def __aenter__(self) -> "AsyncDeepSeekHarness":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def start_session(self, session_id: Optional[str] = None) -> "AsyncSession":
        """A handle on a session (a new id when none is given; an existing one is resumed)."""
        return AsyncSession(self, session_id or new_session_id())

    async def run(
        self,
        input: PromptInput,
        session_id: Optional[str] = None,
        on_notification: Optional[NotificationCallback] = None,
        *,
        output_schema: Optional[Mapping[str, Any]] = None,
        output_type: Optional[Type[Any]] = None,
        max_cost_usd: Optional[float] = None,
    ) -> TurnResult:
        """Runs one turn (in a new session unless ``session_id`` is given) and returns its
        result. ``on_notification`` is called on the event loop, in stream order.
        ``output_schema`` / ``output_type``: structured output, ``max_cost_usd``: the turn's
        budget, as for :meth:`DeepSeekHarness.run`."""
        return await self._run(session_id or new_session_id(), input, on_notification, output_schema, output_type, max_cost_usd)

    async def steer(self, session_id: str, input: PromptInput) -> bool:
        """Adds a user message to the session's running turn: see :meth:`DeepSeekHarness.steer`.
        Await it from another task while ``run()`` waits."""
        await self.start()
        return await _turn_control.asteer(self.client, session_id, input)

    def session_cost_usd(self, session_id: str) -> Optional[float]:
        """What the turns this harness ran in ``session_id`` cost (None: none was priced)."""
        return self._costs.of(session_id)

    def stream(self, input: PromptInput, session_id: Optional[str] = None, *,
               output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
               max_cost_usd: Optional[float] = None) -> "AsyncTurnStream":
        """Runs one turn as an :class:`AsyncTurnStream` (typed events, then the TurnResult).
        ``output_schema`` / ``output_type`` / ``max_cost_usd``: as for :meth:`run`."""
        return AsyncTurnStream(self, session_id or new_session_id(), input, output_schema=output_schema,
                               output_type=output_type, max_cost_usd=max_cost_usd)

    async def cancel(self, session_id: str) -> bool:
        """Cancels the session's turn in flight; True when there was one (it has settled
        ``aborted`` when this returns)."""
        await self.start()
        return await acancel(self.client, session_id)

    # ------------------------------------------------------------------ the sessions API

    async def list_sessions(self) -> List[SessionInfo]:
        """This workspace's sessions (subagent sessions and forks included), newest first."""
        await self.start()
        listed = await _sessions.alist_sessions(self.client)
        self._log_folder.learn(listed.log_folder)
        return list(listed.sessions)

    async def session(self, session_id: str) -> "AsyncSession":
        """A handle on an existing session, to resume it; raises
        :class:`~deepseek_harness.InvalidParamsError` (``kind == "unknown-session"``) when there
        is none by that id (:meth:`start_session` creates one instead)."""
        await self.start()
        await _sessions.aread_page(self.client, session_id, limit=1)
        return AsyncSession(self, session_id)

    def log_path_of(self, session_id: str) -> Optional[Path]:
        """Where the bridge keeps the log of ``session_id`` (None with ``--no-session-log``).
        The folder is the bridge's answer to ``session/list``: unless :meth:`list_sessions`
        already ran, the first call starts the bridge and asks, blocking until it answers."""
        if not self._log_folder.known:
            self._harness.start()
            self._log_folder.learn(_sessions.list_sessions(self.client).log_folder)
        return _sessions.log_path(self._log_folder.folder, session_id)

    async def _run(self, session_id: str, input: PromptInput, on_notification: Optional[NotificationCallback],
                   output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
                   max_cost_usd: Optional[float] = None) -> TurnResult:
        spec = output_spec(output_schema, output_type)
        await self._prepare(session_id)
        collector = TurnCollector(session_id, on_notification, spec, self._costs)
        response = await arun_prompt(self.client, session_id, input, collector.add, keep_chunk=collector.keep_chunk,
                                     output_schema=spec.schema if spec else None, max_cost_usd=max_cost_usd)
        return collector.result(response)

    async def _prepare(self, session_id: str) -> None:
        """Before a turn: the bridge is up, and an abandoned stream of this session has been
        cancelled and has settled (otherwise the new prompt would find the session busy), as has
        a turn of it given up on without waiting (interrupted: :func:`asettle_abandoned`)."""
        if self._harness.initialize_response is None:
            await self.start()
        if session_id in self._abandoned:
            task = self._reap(session_id)
            if task is not None:
                # wait, not shield: never raises the cleanup's outcome into this turn, and a
                # cancelled caller leaves the cleanup running.
                await asyncio.wait([task])
        await asettle_abandoned(self.client, session_id)

    # -- abandoned streams ----------------------------------------------------------------

    def _abandon(self, session_id: str, call: PromptCall) -> None:
        """Called from ``AsyncTurnStream.__del__``: at any moment, possibly inside the garbage
        collector, so nothing here takes a lock or writes to the bridge. The cancel is sent from
        a callback on the call's own loop."""
        inbox = call.pending.inbox
        assert isinstance(inbox, AsyncInbox)
        self._abandoned[session_id] = call
        try:
            inbox.loop.call_soon_threadsafe(self._reap, session_id)
        except RuntimeError:  # the loop is closed: the bridge settles the turn on its own
            self._abandoned.pop(session_id, None)

    def _reap(self, session_id: str) -> Optional["asyncio.Task[None]"]:
        """Starts (once) the task cancelling an abandoned stream's turn; returns that task."""
        entry = self._abandoned.get(session_id)
        if entry is None or isinstance(entry, asyncio.Task):
            return entry
        task = asyncio.get_running_loop().create_task(entry.aabort())
        self._abandoned[session_id] = task
        task.add_done_callback(functools.partial(self._reaped, session_id))
        return task

    def _reaped(self, session_id: str, task: "asyncio.Task[None]") -> None:
        if self._abandoned.get(session_id) is task:
            del self._abandoned[session_id]
        if not task.cancelled():
            task.exception()  # a failed cleanup has nobody to report to; the next turn will say

    def __repr__(self) -> str:
        return f"AsyncDeepSeekHarness(provider={self._harness.provider!r}, model={self._harness.model!r})"


class AsyncSession:
    """One conversation: successive :meth:`run` calls continue it."""

    def __init__(self, harness: AsyncDeepSeekHarness, session_id: str) -> None:
        self.harness = harness
        self.session_id = session_id

    @property
    def id(self) -> str:
        return self.session_id

    async def run(self, input: PromptInput, on_notification: Optional[NotificationCallback] = None, *,
                  output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
                  max_cost_usd: Optional[float] = None) -> TurnResult:
        """Runs one turn of this session. Cancelling the awaiting task cancels the turn, waits
        until it has settled, then raises ``CancelledError``; the session stays usable.
        ``output_schema`` / ``output_type`` / ``max_cost_usd``: as for :meth:`DeepSeekHarness.run`."""
        return await self.harness._run(self.session_id, input, on_notification, output_schema, output_type, max_cost_usd)

    async def steer(self, input: PromptInput) -> bool:
        """Adds ``input`` to this session's running turn (from another task while :meth:`run`
        awaits): see :meth:`DeepSeekHarness.steer`."""
        return await self.harness.steer(self.session_id, input)

    @property
    def cost_usd(self) -> Optional[float]:
        """What this session's turns run by this harness cost (None: none was priced)."""
        return self.harness.session_cost_usd(self.session_id)

    def stream(self, input: PromptInput, *, output_schema: Optional[Mapping[str, Any]] = None,
               output_type: Optional[Type[Any]] = None, max_cost_usd: Optional[float] = None) -> "AsyncTurnStream":
        """Runs one turn of this session as an :class:`AsyncTurnStream`. ``output_schema`` /
        ``output_type`` / ``max_cost_usd``: as for :meth:`DeepSeekHarness.run`."""
        return AsyncTurnStream(self.harness, self.session_id, input, output_schema=output_schema,
                               output_type=output_type, max_cost_usd=max_cost_usd)

    async def cancel(self) -> bool:
        """Cancels this session's turn in flight; True when there was one."""
        return await self.harness.cancel(self.session_id)

    @property
    def log_path(self) -> Optional[Path]:
        """This session's durable log (None with ``--no-session-log``)."""
        return self.harness.log_path_of(self.session_id)

    async def history(self, page_size: int = READ_LIMIT_DEFAULT, after_seq: Optional[int] = None) -> AsyncIterator[TurnEvent]:
        """The session's logged events, typed, fetched a page at a time (``async for``); see
        :meth:`Session.history <deepseek_harness.Session.history>`."""
        await self.harness.start()
        async for event in _sessions.ahistory(self.harness.client, self.session_id, page_size, after_seq):
            yield event

    async def fork(self, turn: Optional[int] = None, new_id: Optional[str] = None) -> "AsyncSession":
        """A new session whose history is this one's up to ``turn`` (default: all); see
        :meth:`Session.fork <deepseek_harness.Session.fork>`."""
        await self.harness.start()
        forked = await _sessions.afork_session(self.harness.client, self.session_id, new_id or new_session_id(), turn)
        return AsyncSession(self.harness, forked)

    async def delete(self) -> bool:
        """Deletes the session's log; False when there was none; SessionBusyError while a turn runs."""
        await self.harness.start()
        return await _sessions.adelete_session(self.harness.client, self.session_id)

    async def rewind(self, turn: int, files: bool = True, conversation: bool = True, force: bool = False) -> "RewindResult":
        """:meth:`Session.rewind <deepseek_harness.Session.rewind>`, awaiting."""
        await self.harness.start()
        return await _checkpoints.arewind_session(self.harness.client, self.session_id, turn, files, conversation, force)

    async def checkpoints(self) -> "List[CheckpointInfo]":
        """:meth:`Session.checkpoints <deepseek_harness.Session.checkpoints>`, awaiting."""
        await self.harness.start()
        return await _checkpoints.alist_checkpoints(self.harness.client, self.session_id)

    async def compact(self) -> bool:
        """:meth:`Session.compact <deepseek_harness.Session.compact>`, awaiting."""
        await self.harness.start()
        return await _sessions.acompact_session(self.harness.client, self.session_id)

    def __repr__(self) -> str:
        return f"AsyncSession({self.session_id!r})"


class AsyncTurnStream:
    """A turn, event by event, for ``async for``: typed events as they arrive (the session's and
    its subagents', in stream order), then the :class:`TurnResult` as the last item, also kept
    in :attr:`result`.

    The prompt is sent on the first ``__anext__``. Closing early — ``await aclose()``, leaving an
    ``async with`` block, or cancelling the task that iterates — cancels the turn and waits until
    it has settled. Python does not close an async iterator on ``break``; a stream dropped with
    its turn in flight is cancelled from a callback on its loop, and the session's next turn
    waits for that to finish first. Prefer ``async with session.stream(...) as events:``.
    ``output_schema`` / ``output_type`` / ``max_cost_usd``: as for :class:`~deepseek_harness.TurnStream`.
    """

    def __init__(self, harness: AsyncDeepSeekHarness, session_id: str, input: PromptInput, *,
                 output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
                 max_cost_usd: Optional[float] = None) -> None:
        spec = output_spec(output_schema, output_type)
        self.harness = harness
        self.session_id = session_id
        self._input = input
        self._buffer = StreamBuffer(session_id, harness._costs, spec, max_cost_usd)

    @property
    def result(self) -> Optional[TurnResult]:
        """The :class:`TurnResult` once the stream has yielded it, else None."""
        return self._buffer.result

    def __aiter__(self) -> "AsyncTurnStream":
        return self

    async def __anext__(self) -> StreamItem:
        buf = self._buffer
        while True:
            if buf.queue:
                return event_from_notification(buf.queue.popleft())
            if buf.finished:
                raise StopAsyncIteration
            try:
                call = buf.call
                if call is None:
                    await self.harness._prepare(self.session_id)
                    call = buf.open(self.harness.client, self._input, AsyncInbox(asyncio.get_running_loop()))
                batch = await call.anext_batch()
            except BaseException:
                buf.finished = True
                raise
            if batch is None:
                return buf.settle()
            buf.take(batch)

    async def aclose(self) -> None:
        """Stops the stream; a turn still in flight is cancelled, and this returns once it has
        settled (bounded by ``shutdown_timeout_seconds``). Idempotent."""
        buf = self._buffer
        buf.finished = True
        buf.queue.clear()
        if buf.in_flight:
            assert buf.call is not None
            await buf.call.aabort()

    async def __aenter__(self) -> "AsyncTurnStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __del__(self) -> None:
        try:
            buf = self._buffer
            if buf.in_flight:
                assert buf.call is not None
                self.harness._abandon(self.session_id, buf.call)
        except Exception:  # noqa: BLE001 - nothing can be reported from a finalizer
            pass

    def __repr__(self) -> str:
        state = "done" if self._buffer.finished else "in flight" if self._buffer.call else "not started"
        return f"AsyncTurnStream({self.session_id!r}, {state})"

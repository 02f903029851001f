"""The friendly surface: :class:`DeepSeekHarness`, :class:`Session`, :class:`TurnStream`, and
(from :mod:`deepseek_harness.results`) :class:`TurnResult`. The asyncio twins are in
:mod:`deepseek_harness.async_api`; what both share is in :mod:`deepseek_harness._internal`."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator, List, Mapping, Optional, Type

from ._internal.tool_dispatch import ToolDispatcher
from ._internal.decode import NotificationCallback
from ._internal.forking import renew_locks_in_child
from ._internal.prompt import PromptInput, run_prompt
from ._internal import session_requests as _sessions
from . import checkpoints as _checkpoints
from ._internal.output import output_spec
from ._internal.harness_setup import LogFolder, check_tools, close_when_dropped, closed_reason, initialize_keywords
from ._internal.turn import StreamBuffer, TurnCollector
from .client import HarnessClient
from .events import event_from_notification
from .options import HarnessOptions, resolve_options
from .results import StreamItem, TurnResult, final_response_of, usage_of
from . import turn_control as _turn_control
from .wire import READ_LIMIT_DEFAULT, CheckpointInfo, InitializeResponse, RewindResult, SessionInfo, TurnEvent

__all__ = [
    "DeepSeekHarness",
    "Session",
    "TurnResult",
    "TurnStream",
    "StreamItem",
    "new_session_id",
    "final_response_of",
    "usage_of",
]


def new_session_id() -> str:
    """A fresh session id (32 hex digits; matches ``[A-Za-z0-9._:-]{1,128}``)."""
    return uuid.uuid4().hex


class TurnStream:
    """A turn, event by event: iterate it for typed :mod:`events <deepseek_harness.events>` as
    they arrive (the session's and its subagents', in stream order), then the
    :class:`TurnResult` as the last item, also kept in :attr:`result`.

    The prompt is sent on the first ``next()``. Closing the stream before the end (``close()``,
    leaving a ``with`` block, ``break`` out of a ``for`` loop over a stream nobody else holds)
    cancels the turn and waits until it has settled, so the session can run its next turn at
    once. Errors are those of :meth:`Session.run`.
    ``output_schema`` / ``output_type`` / ``max_cost_usd`` are :meth:`DeepSeekHarness.run`'s; a
    bad output keyword raises ``TypeError`` here, before anything is sent, a refused budget at
    the first ``next()``. The turn's cost joins :meth:`DeepSeekHarness.session_cost_usd`.
    """

    def __init__(self, harness: "DeepSeekHarness", session_id: str, input: PromptInput, *,
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

    def __iter__(self) -> "TurnStream":
        return self

    def __next__(self) -> StreamItem:
        buf = self._buffer
        while True:
            if buf.queue:
                return event_from_notification(buf.queue.popleft())
            if buf.finished:
                raise StopIteration
            try:
                call = buf.call
                if call is None:
                    self.harness.start()
                    call = buf.open(self.harness.client, self._input)
                batch = call.next_batch()
            except BaseException:
                buf.finished = True
                raise
            if batch is None:
                return buf.settle()
            buf.take(batch)

    def close(self) -> None:
        """Stops the stream; a turn still in flight is cancelled, and this returns once it has
        settled (bounded by ``shutdown_timeout_seconds``). Idempotent."""
        buf = self._buffer
        buf.finished = True
        buf.queue.clear()
        if buf.in_flight:
            assert buf.call is not None
            buf.call.abort()

    def __enter__(self) -> "TurnStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # An abandoned stream (e.g. `for ev in session.stream(...): break`) must not leave its
        # turn running and its session busy: CPython finalizes it right there, like a generator.
        try:
            if self._buffer.in_flight:
                self.close()
        except Exception:  # noqa: BLE001 - nothing can be reported from a finalizer
            pass

    def __repr__(self) -> str:
        state = "done" if self._buffer.finished else "in flight" if self._buffer.call else "not started"
        return f"TurnStream({self.session_id!r}, {state})"


class DeepSeekHarness:
    """A harness-bridge process, initialized for one workspace, provider and model.

    Use it as a context manager (entering starts the bridge and sends ``initialize``), or call
    :meth:`start` and :meth:`close`. :meth:`run` also starts it on first use.

    Configured by ``options`` (a :class:`~deepseek_harness.HarnessOptions`: every field, its
    default and its meaning are documented there) and keyword arguments named like its fields,
    which override them: ``DeepSeekHarness(provider="scripted", model="demo")``, or
    ``DeepSeekHarness(options=base, cwd=repo)`` for ``base`` with another workspace. An unknown
    keyword raises ``TypeError``.

    The attributes ``provider``, ``model``, ``cwd``, ``max_tokens``, ``max_steps``,
    ``permission_mode``, ``tools`` (the built-in allow-list, None: all) and ``instructions``
    hold what ``initialize`` will send, and may be changed before :meth:`start`.

    Client tools (``tools=[...]`` holding :func:`~deepseek_harness.tool` functions) and
    ``can_use_tool`` run off the SDK's reader thread: sync functions on a worker pool this
    harness owns (shut down by :meth:`close`), ``async`` ones in ``asyncio.run`` on such a
    worker, a fresh event loop per call (:class:`~deepseek_harness.AsyncDeepSeekHarness` runs
    them on the caller's loop instead).
    """

    def __init__(self, options: Optional[HarnessOptions] = None, **overrides: Any) -> None:
        o = resolve_options(type(self).__name__, options, overrides)
        #: The options this harness was made with.
        self.options = o
        self.provider = o.provider
        self.model = o.model
        self.cwd = o.cwd
        self.max_tokens = o.max_tokens
        self.max_steps = o.max_steps
        self.permission_mode = o.permission_mode
        self._tools = check_tools(o)
        self.tools = self._tools.builtin
        #: The client tools offered (from ``tools``).
        self.client_tools = self._tools.client
        self.instructions = o.instructions
        self._client = HarnessClient(options=o)
        self._client.closed_reason = closed_reason(type(self).__name__)
        self._dispatcher: Optional[ToolDispatcher] = None
        if self._tools.need_dispatch(o.approvals):
            self._dispatcher = ToolDispatcher(self._client, self._tools.client, o.can_use_tool, self._tools.hooks)
        self._log_folder = LogFolder()
        self._start_lock = threading.Lock()
        # A fork made while a thread was starting this harness must not hang on this lock.
        renew_locks_in_child(self, "_start_lock")
        self._initialized: Optional[InitializeResponse] = None
        self._costs = _turn_control.SessionCosts()
        self._close_when_dropped = close_when_dropped(self, self._client, self._dispatcher)

    @property
    def client(self) -> HarnessClient:
        """The underlying :class:`HarnessClient`."""
        return self._client

    @property
    def initialize_response(self) -> Optional[InitializeResponse]:
        return self._initialized

    def start(self) -> "DeepSeekHarness":
        """Starts the bridge and initializes it. Idempotent; closes the bridge if initialize fails."""
        with self._start_lock:
            if self._initialized is not None:
                return self
            self._client.start()
            if self._dispatcher is not None:
                self._dispatcher.attach()
            try:
                self._initialized = self._client.initialize(
                    self.cwd if self.cwd is not None else os.getcwd(), self.provider, self.model,
                    **initialize_keywords(self.options, self._tools, self))
            except BaseException:
                self.close()
                raise
            return self

    def close(self) -> None:
        """Shuts the bridge down (see :meth:`HarnessClient.close`), then the client tools'
        worker pool (a sync tool still running finishes on its own; its answer is dropped).
        Idempotent."""
        self._close_when_dropped.detach()
        try:
            self._client.close()
        finally:
            if self._dispatcher is not None:
                self._dispatcher.close()

    def __enter__(self) -> "DeepSeekHarness":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start_session(self, session_id: Optional[str] = None) -> "Session":
        """A handle on a session (a new id when none is given; an existing one is resumed)."""
        return Session(self, session_id or new_session_id())

    def run(
        self,
        input: PromptInput,
        session_id: Optional[str] = None,
        on_notification: Optional[NotificationCallback] = None,
        *,
        output_schema: Optional[Mapping[str, Any]] = None,
        output_type: Optional[Type[Any]] = None,
        max_cost_usd: Optional[float] = None,
    ) -> TurnResult:
        """Runs one turn (in a new session unless ``session_id`` is given) and returns its result.

        ``max_cost_usd``: once the turn's cost reached this many US dollars, no further model
        request starts and the turn ends ``budget`` (status ``error``); it needs the model's
        prices (DeepSeek's models, or ``prices=``), else :class:`~deepseek_harness.InvalidParamsError`
        (``kind == "no-prices"``). See docs/turn-control.md.

        Structured output: with ``output_schema`` (a JSON Schema dict) or ``output_type`` (a
        pydantic model class, or any type pydantic can validate), the model answers with a value
        valid against the schema, in :attr:`TurnResult.output` (an ``output_type`` instance when
        given); with none after 3 tries the turn ends ``output-invalid`` (status ``error``)."""
        return self._run(session_id or new_session_id(), input, on_notification, output_schema, output_type, max_cost_usd)

    def steer(self, session_id: str, input: PromptInput) -> bool:
        """Adds a user message to the session's running turn (``session/steer``): it joins the
        history before the turn's next model request, after the results of the tools already
        running. Blocks until the bridge recorded it (True: a ``user/steer`` event) or refused
        it (False: no turn in flight, or the turn ended first). Safe from another thread while
        ``run()`` waits; never starts a turn."""
        self.start()
        return _turn_control.steer(self._client, session_id, input)

    def session_cost_usd(self, session_id: str) -> Optional[float]:
        """What the turns this harness ran in ``session_id`` cost (None: none was priced)."""
        return self._costs.of(session_id)

    def stream(self, input: PromptInput, session_id: Optional[str] = None, *,
               output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
               max_cost_usd: Optional[float] = None) -> TurnStream:
        """Runs one turn (in a new session unless ``session_id`` is given) as a
        :class:`TurnStream`: typed events as they arrive, then the :class:`TurnResult`.
        ``output_schema`` / ``output_type`` / ``max_cost_usd``: as for :meth:`run` (the result's
        ``output``, the turn's budget)."""
        return TurnStream(self, session_id or new_session_id(), input, output_schema=output_schema,
                          output_type=output_type, max_cost_usd=max_cost_usd)

    def cancel(self, session_id: str) -> bool:
        """Cancels the session's turn in flight; True when there was one."""
        return self._client.session_cancel(session_id)

    # ------------------------------------------------------------------ the sessions API

    def list_sessions(self) -> List[SessionInfo]:
        """This workspace's sessions (subagent sessions and forks included), newest first."""
        self.start()
        listed = _sessions.list_sessions(self._client)
        self._log_folder.learn(listed.log_folder)
        return list(listed.sessions)

    def session(self, session_id: str) -> "Session":
        """A handle on an existing session, to resume it; raises
        :class:`~deepseek_harness.InvalidParamsError` (``kind == "unknown-session"``) when this
        workspace has none by that id (:meth:`start_session` creates one instead)."""
        self.start()
        _sessions.read_page(self._client, session_id, limit=1)
        return Session(self, session_id)

    def log_path_of(self, session_id: str) -> Optional[Path]:
        """Where the bridge keeps the log of ``session_id`` (None with ``--no-session-log``);
        the file exists once the session has been prompted. It is JSONL: a header line, then one
        event per line. While a bridge has it open its last line ends in spaces before the
        newline (lines are written over them), which ``json.loads`` of each line takes as they
        are; a line being written may be torn. The folder is the bridge's answer
        to ``session/list``: the first call starts the bridge and asks, unless
        :meth:`list_sessions` already did."""
        if not self._log_folder.known:
            self.list_sessions()
        return _sessions.log_path(self._log_folder.folder, session_id)

    def _run(self, session_id: str, input: PromptInput, on_notification: Optional[NotificationCallback],
             output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
             max_cost_usd: Optional[float] = None) -> TurnResult:
        spec = output_spec(output_schema, output_type)
        self.start()
        collector = TurnCollector(session_id, on_notification, spec, self._costs)
        response = run_prompt(self._client, session_id, input, collector.add, keep_chunk=collector.keep_chunk,
                              output_schema=spec.schema if spec else None, max_cost_usd=max_cost_usd)
        return collector.result(response)


class Session:
    """One conversation: successive :meth:`run` calls continue it."""

    def __init__(self, harness: DeepSeekHarness, session_id: str) -> None:
        self.harness = harness
        self.session_id = session_id

    @property
    def id(self) -> str:
        return self.session_id

    def run(self, input: PromptInput, on_notification: Optional[NotificationCallback] = None, *,
            output_schema: Optional[Mapping[str, Any]] = None, output_type: Optional[Type[Any]] = None,
            max_cost_usd: Optional[float] = None) -> TurnResult:
        """Runs one turn of this session (``output_schema`` / ``output_type`` / ``max_cost_usd``:
        see :meth:`DeepSeekHarness.run`)."""
        return self.harness._run(self.session_id, input, on_notification, output_schema, output_type, max_cost_usd)

    def steer(self, input: PromptInput) -> bool:
        """Adds ``input`` to this session's running turn: see :meth:`DeepSeekHarness.steer`.
        Call it from another thread while :meth:`run` waits."""
        return self.harness.steer(self.session_id, input)

    @property
    def cost_usd(self) -> Optional[float]:
        """What this session's turns run by this harness cost in US dollars (the sum of their
        :attr:`TurnResult.cost_usd`); None when none was priced."""
        return self.harness.session_cost_usd(self.session_id)

    def stream(self, input: PromptInput, *, output_schema: Optional[Mapping[str, Any]] = None,
               output_type: Optional[Type[Any]] = None, max_cost_usd: Optional[float] = None) -> TurnStream:
        """Runs one turn of this session as a :class:`TurnStream`: typed events as they arrive,
        then the :class:`TurnResult` (see :class:`TurnStream` for early closing).
        ``output_schema`` / ``output_type`` / ``max_cost_usd``: see :meth:`DeepSeekHarness.run`."""
        return TurnStream(self.harness, self.session_id, input, output_schema=output_schema,
                          output_type=output_type, max_cost_usd=max_cost_usd)

    def cancel(self) -> bool:
        """Cancels this session's turn in flight; True when there was one."""
        return self.harness.cancel(self.session_id)

    @property
    def log_path(self) -> Optional[Path]:
        """This session's durable log (None with ``--no-session-log``); it exists once the session was prompted."""
        return self.harness.log_path_of(self.session_id)

    def history(self, page_size: int = READ_LIMIT_DEFAULT, after_seq: Optional[int] = None) -> Iterator[TurnEvent]:
        """The session's logged events (after ``after_seq``), typed as a turn stream yields them
        (no ``assistant/chunk``: those are never logged), read ``page_size`` at a time (at most
        1000) as the iteration goes."""
        self.harness.start()
        return _sessions.history(self.harness.client, self.session_id, page_size, after_seq)

    def fork(self, turn: Optional[int] = None, new_id: Optional[str] = None) -> "Session":
        """A new session whose history is this one's up to the end of ``turn`` (default: all of
        it), under ``new_id`` (default: a fresh id). The two then go their own ways. Raises
        :class:`~deepseek_harness.InvalidParamsError` for an existing ``new_id``
        (``session-exists``), an unknown session or turn, and
        :class:`~deepseek_harness.SessionBusyError` for the turn that is running."""
        self.harness.start()
        forked = _sessions.fork_session(self.harness.client, self.session_id, new_id or new_session_id(), turn)
        return Session(self.harness, forked)

    def delete(self) -> bool:
        """Deletes the session's log; False when there was none. Raises
        :class:`~deepseek_harness.SessionBusyError` while a turn runs."""
        self.harness.start()
        return _sessions.delete_session(self.harness.client, self.session_id)

    def rewind(self, turn: int, files: bool = True, conversation: bool = True, force: bool = False) -> "RewindResult":
        """Undoes turns ``turn`` and later (``session/rewind``; docs/checkpoints.md): with
        ``files``, the workspace files they changed are put back as they were before ``turn``
        (files they created are removed); with ``conversation``, the history is cut back to
        before ``turn``. A file someone else changed since is left alone and listed in
        ``conflicts`` unless ``force``. Fork first (:meth:`fork`) to keep a way back: a
        rewind that changed files has a checkpoint of its own (the last of :meth:`checkpoints`,
        ``rewind`` set), and ``rewind(that_turn, conversation=False)`` puts those files back
        (docs/checkpoints.md). Raises :class:`~deepseek_harness.SessionBusyError` while a turn
        runs and :class:`~deepseek_harness.InvalidParamsError` for an unknown turn or session,
        or ``conversation`` on a rewind's own checkpoint."""
        self.harness.start()
        return _checkpoints.rewind_session(self.harness.client, self.session_id, turn, files, conversation, force)

    def checkpoints(self) -> "List[CheckpointInfo]":
        """The checkpoints of this session's turns still in its history (turn, kind, files),
        read from its log."""
        self.harness.start()
        return _checkpoints.list_checkpoints(self.harness.client, self.session_id)

    def compact(self) -> bool:
        """Summarizes this session's older history now (``session/compact``); True when it was
        compacted, False when there was nothing to compact. Raises
        :class:`~deepseek_harness.SessionBusyError` while a turn runs."""
        self.harness.start()
        return _sessions.compact_session(self.harness.client, self.session_id)

    def __repr__(self) -> str:
        return f"Session({self.session_id!r})"

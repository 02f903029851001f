"""One ``session/prompt`` in flight, seen from its consumer, for both fronts.

:class:`PromptCall` is the prompt state machine: it pulls the batches of the prompt's inbox in
stream order, settles on the response, and cancels a turn whose consumer gives up (waiting,
bounded, until it has settled, so the session is idle afterwards). :func:`run_prompt` and
:func:`arun_prompt` drive one with a callback, blocking or awaiting.

Ordering: the reader appends a prompt's notifications and finally its response to one inbox;
the consumer drains it on its own thread (or the event loop), calling the callback for each
notification, and returns when it reaches the response. So every notification that arrived
before the response has been handed to the callback when the call returns, and callbacks never
run on the reader thread.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union, cast

from ..errors import RequestTimeoutError
from ..wire import (
    SessionCancelParams, SessionCancelResponse, SessionPromptParams, SessionPromptResponse, TextBlock, TextBlockParams,
)
from .connection import (
    Connection, arequest, await_quietly, forget, outcome, remember_abandoned, send, take_abandoned, try_cancel, validate,
)
from .decode import NotificationCallback, deliver
from .inbox import INF, AnyInbox, AsyncInbox, Pending
from .tracing import current_traceparent

__all__ = ["PromptInput", "PromptCall", "run_prompt", "arun_prompt", "acancel", "content_blocks", "settle_abandoned",
           "asettle_abandoned"]

#: What a prompt takes: a string (one text block), or text blocks as dicts or :class:`TextBlock`.
PromptInput = Union[str, Iterable[Union[Mapping[str, Any], TextBlock]]]


def content_blocks(blocks: PromptInput) -> List[TextBlockParams]:
    if isinstance(blocks, str):
        return [{"type": "text", "text": blocks}]
    if isinstance(blocks, (os.PathLike, bytes, bytearray, Mapping, TextBlock)) or not isinstance(blocks, Iterable):
        # Each is iterable, or a mistake, but none is a list of blocks: iterating a Path raised
        # "'PosixPath' object is not iterable", bytes gave ints, a dict its keys.
        hint = " (to send a file's text, read it: Path(...).read_text())" if isinstance(blocks, os.PathLike) else \
            " (a single block goes in a list: [block])" if isinstance(blocks, (Mapping, TextBlock)) else ""
        raise TypeError(f"the prompt must be a str or a list of text blocks (dicts or TextBlock), "
                        f"not {type(blocks).__name__}{hint}")
    # The bridge checks the blocks a caller passes (and answers -32602 to a bad one).
    out: List[TextBlockParams] = []
    for b in blocks:
        if isinstance(b, TextBlock):
            out.append(cast(TextBlockParams, b.to_wire()))
        elif isinstance(b, Mapping):
            out.append(cast(TextBlockParams, dict(b)))
        else:
            raise TypeError(f"a content block must be a dict or TextBlock, not {type(b).__name__}")
    return out


class PromptCall:
    """One ``session/prompt`` in flight, seen from its consumer.

    The reader thread fills the request's inbox with batches of notifications (decoded
    :class:`Notification` objects, or raw fast-path lines: see :func:`deliver`) and finally
    the response. The consumer pulls them in that order with :meth:`next_batch` (blocking, for
    an :class:`Inbox`) or :meth:`anext_batch` (awaiting, for an :class:`AsyncInbox`); both
    return ``None`` once the turn has settled, with :attr:`response` set. A consumer that gives
    up (a callback raised, a stream was closed, a task was cancelled, the timeout passed) calls
    :meth:`abort` / :meth:`aabort`: ``session/cancel``, then wait, bounded by the client's
    ``shutdown_timeout_seconds``, until the prompt and the cancel have both been answered, so
    the session is idle (reusable) afterwards. One interrupted while it waits (Ctrl-C) does not
    wait (:meth:`_abandon`); the session's next prompt waits instead (:func:`settle_abandoned`).
    """

    __slots__ = ("client", "session_id", "pending", "timeout", "deadline", "response", "settled")

    def __init__(
        self,
        client: Connection,
        session_id: str,
        blocks: PromptInput,
        timeout: Optional[float] = None,
        inbox: Optional[AnyInbox] = None,
        output_schema: Optional[Dict[str, Any]] = None,
        max_cost_usd: Optional[float] = None,
    ) -> None:
        wire_blocks = content_blocks(blocks)
        params: SessionPromptParams = {"sessionId": session_id, "contentBlocks": wire_blocks}
        if output_schema is not None:
            params["outputSchema"] = output_schema
        if max_cost_usd is not None:
            # The bridge checks it (-32602 for a negative, zero or non-number budget).
            params["maxCostUsd"] = max_cost_usd
        # The caller's span (opentelemetry-api installed, a span current here): the turn nests under it.
        traceparent = current_traceparent()
        if traceparent is not None:
            params["traceparent"] = traceparent
        if timeout is None:
            timeout = client.request_timeout_seconds
        self.client = client
        self.session_id = session_id
        self.timeout = timeout
        self.response: Optional[SessionPromptResponse] = None
        #: True once the consumer is done with the inbox: answered, aborted or abandoned.
        self.settled = False
        self.deadline = INF if timeout is None else time.monotonic() + timeout
        if not isinstance(inbox, AsyncInbox):
            # The blocking front waits here; the asyncio one awaited asettle_abandoned first.
            settle_abandoned(client, session_id, self.deadline)
        self.pending = send(client, "session/prompt", params, session_id, inbox=inbox)

    # -- shared ------------------------------------------------------------------------

    def _take(self, item: Any) -> Optional[List[Any]]:
        """A batch as it is, or None once ``item`` (the response) has settled the turn."""
        if type(item) is list:
            return item
        self._settle(item)
        return None

    def _settle(self, item: Any) -> None:
        self.settled = True
        result = outcome(self.client, item, "session/prompt")
        self.response = validate(SessionPromptResponse, result, "session/prompt")

    def _timeout_error(self) -> RequestTimeoutError:
        assert self.timeout is not None
        return RequestTimeoutError("session/prompt", self.timeout, "the turn was cancelled")

    def _abandon(self) -> None:
        """Interrupted while waiting (e.g. KeyboardInterrupt): drop the waiter, ask the bridge to
        cancel, and do not wait for anything here (Ctrl-C must return at once). The cancel is
        remembered: the session's next prompt waits for its answer (the turn has then settled)
        before it is sent, as it would after a stream's ``close()``."""
        if self.settled:
            return
        self.settled = True
        forget(self.client, self.pending)
        self._remember(try_cancel(self.client, self.session_id, self._cancel_inbox()))

    def _cancel_inbox(self) -> Optional[AnyInbox]:
        inbox = self.pending.inbox
        return AsyncInbox(inbox.loop) if isinstance(inbox, AsyncInbox) else None

    def _remember(self, cancel: Optional[Pending]) -> None:
        if cancel is not None:
            remember_abandoned(self.client, self.session_id, cancel)

    # -- blocking front ----------------------------------------------------------------

    def next_batch(self) -> Optional[List[Any]]:
        """The next batch (see :func:`deliver`), or None once the response has arrived."""
        try:
            item = self.pending.inbox.get(self.deadline)
        except TimeoutError:
            self.abort()
            raise self._timeout_error() from None
        except BaseException:
            self._abandon()
            raise
        return self._take(item)

    def abort(self) -> None:
        """Cancels the turn and waits (bounded) until it has settled; what arrives meanwhile is
        dropped. Idempotent; a no-op once the turn has settled."""
        if self.settled:
            return
        self.settled = True
        client = self.client
        cancel = try_cancel(client, self.session_id)
        wait = client.shutdown_timeout_seconds
        deadline = time.monotonic() + wait
        try:
            while type(self.pending.inbox.get(deadline)) is list:
                pass
        except TimeoutError:
            forget(client, self.pending)
            if cancel is not None:
                forget(client, cancel)
            return
        except BaseException:
            # Interrupted in this wait (Ctrl-C while a stream closes): as _abandon, the next
            # prompt of the session waits for the cancel instead.
            forget(client, self.pending)
            self._remember(cancel)
            raise
        if cancel is not None:
            await_quietly(client, cancel, wait)

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
        return self._take(item)

    async def aabort(self) -> None:
        """:meth:`abort`, awaiting. A further cancellation of the task while it waits does not
        cut the wait short (the wait is bounded anyway): it is re-raised once the turn settled."""
        if self.settled:
            return
        self.settled = True
        client = self.client
        cancel = try_cancel(client, self.session_id, AsyncInbox(asyncio.get_running_loop()))
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
                except BaseException:
                    forget(client, self.pending)  # KeyboardInterrupt on the loop: as abort()
                    self._remember(cancel)
                    raise
            if not answered:  # the bridge did not settle in time: stop waiting for it at all
                forget(client, self.pending)
                if cancel is not None:
                    forget(client, cancel)
                break
        if cancelled_again:
            raise asyncio.CancelledError


def settle_abandoned(conn: Connection, session_id: str, deadline: float = INF) -> None:
    """Before a prompt of ``session_id`` (blocking): waits until the turn of it that a caller gave
    up on without waiting (:meth:`PromptCall._abandon`) has settled, i.e. until the bridge
    answered the cancel sent for it, so the new prompt does not find the session busy. Bounded:
    by ``shutdown_timeout_seconds`` (what :meth:`PromptCall.abort` waits for a cancelled turn) and
    by ``deadline`` (the new prompt's own timeout); past them the prompt is sent anyway, and a
    turn still running makes it :class:`~deepseek_harness.SessionBusyError`, never a hang."""
    cancel = take_abandoned(conn, session_id)
    if cancel is None:
        return
    limit = min(deadline, time.monotonic() + conn.shutdown_timeout_seconds)
    try:
        if isinstance(cancel.inbox, AsyncInbox):  # the asyncio front's: poll it
            while not cancel.inbox.items and time.monotonic() < limit:
                time.sleep(0.01)
            if not cancel.inbox.items:
                raise TimeoutError
        else:
            cancel.inbox.get(limit)
    except TimeoutError:
        forget(conn, cancel)
    except BaseException:
        remember_abandoned(conn, session_id, cancel)  # interrupted again: the next prompt waits
        raise


async def asettle_abandoned(conn: Connection, session_id: str) -> None:
    """:func:`settle_abandoned` for the asyncio front (awaiting; the prompt's own timeout starts
    after it)."""
    cancel = take_abandoned(conn, session_id)
    if cancel is None:
        return
    limit = time.monotonic() + conn.shutdown_timeout_seconds
    inbox = cancel.inbox
    try:
        if isinstance(inbox, AsyncInbox) and inbox.loop is asyncio.get_running_loop():
            await inbox.aget(limit)
        else:  # the blocking front's, or another loop's: poll it
            while not inbox.items and time.monotonic() < limit:
                await asyncio.sleep(0.01)
            if not inbox.items:
                raise TimeoutError
    except TimeoutError:
        forget(conn, cancel)
    except BaseException:
        remember_abandoned(conn, session_id, cancel)
        raise


def run_prompt(conn: Connection, session_id: str, blocks: PromptInput, on_notification: Optional[NotificationCallback],
               timeout: Optional[float] = None, keep_chunk: Optional[NotificationCallback] = None,
               output_schema: Optional[Dict[str, Any]] = None, max_cost_usd: Optional[float] = None) -> SessionPromptResponse:
    """Runs one turn, blocking, handing every notification to ``on_notification`` on this
    thread (``assistant/chunk`` ones to ``keep_chunk`` undecoded, if given: see
    :func:`~.decode.deliver`). If the callback raises, the turn is cancelled and has settled
    before the exception propagates."""
    call = PromptCall(conn, session_id, blocks, timeout, output_schema=output_schema, max_cost_usd=max_cost_usd)
    batch = call.next_batch()
    while batch is not None:
        if on_notification is not None:
            try:
                deliver(batch, on_notification, keep_chunk)
            except BaseException:
                # Whatever the callback raised: cancel the turn, let it settle, re-raise.
                call.abort()
                raise
        batch = call.next_batch()
    assert call.response is not None
    return call.response


async def arun_prompt(conn: Connection, session_id: str, blocks: PromptInput,
                      on_notification: Optional[NotificationCallback], timeout: Optional[float] = None,
                      keep_chunk: Optional[NotificationCallback] = None,
                      output_schema: Optional[Dict[str, Any]] = None, max_cost_usd: Optional[float] = None) -> SessionPromptResponse:
    """:func:`run_prompt` for the asyncio front: awaits instead of blocking, and calls
    ``on_notification`` on the event loop. Cancelling the awaiting task cancels the turn,
    waits until it has settled, then lets ``CancelledError`` propagate."""
    call = PromptCall(conn, session_id, blocks, timeout, AsyncInbox(asyncio.get_running_loop()), output_schema, max_cost_usd)
    batch = await call.anext_batch()
    while batch is not None:
        if on_notification is not None:
            try:
                deliver(batch, on_notification, keep_chunk)
            except BaseException:
                await call.aabort()
                raise
        batch = await call.anext_batch()
    assert call.response is not None
    return call.response


async def acancel(conn: Connection, session_id: str, timeout: Optional[float] = None) -> bool:
    """``session/cancel`` for the asyncio front: True when a turn was in flight (it has settled
    ``aborted`` when this returns)."""
    params: SessionCancelParams = {"sessionId": session_id}
    result = await arequest(conn, "session/cancel", params, timeout=timeout)
    return validate(SessionCancelResponse, result, "session/cancel").cancelled

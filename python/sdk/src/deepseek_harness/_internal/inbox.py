"""Inboxes: the queue between the reader thread and the one consumer of a request.

The reader appends a request's items in stream order (batches of its sessions'
notifications, then its :class:`Response`, or :class:`Closed` when the transport ends); one
consumer drains them. :class:`Inbox` wakes a blocked thread, :class:`AsyncInbox` wakes an
asyncio task; everything else (framing, routing, the prompt state machine) is the same for
both.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from typing import Any, Deque, Dict, Optional, Set, Union

from ..errors import TransportClosedError

__all__ = ["INF", "Response", "Closed", "Inbox", "AsyncInbox", "AnyInbox", "Pending"]

INF = float("inf")


class Response:
    """The response frame of a request, as the last item of its inbox."""

    __slots__ = ("frame",)

    def __init__(self, frame: Dict[str, Any]) -> None:
        self.frame = frame


class Closed:
    """The transport closed: the last item of an inbox."""

    __slots__ = ("error",)

    def __init__(self, error: TransportClosedError) -> None:
        self.error = error


class Inbox:
    """Single-consumer queue. ``put`` is cheap: it sets the event only when it is clear."""

    __slots__ = ("items", "event")

    def __init__(self) -> None:
        self.items: Deque[Any] = collections.deque()
        self.event = threading.Event()

    def put(self, item: Any) -> None:
        self.items.append(item)
        if not self.event.is_set():
            self.event.set()

    def get(self, deadline: float = INF) -> Any:
        """Next item; raises ``TimeoutError`` when ``deadline`` (monotonic) passes first."""
        items = self.items
        while True:
            try:
                return items.popleft()
            except IndexError:
                pass
            self.event.clear()
            if items:
                continue
            if deadline == INF:
                self.event.wait()
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.event.wait(remaining):
                    if items:
                        continue
                    raise TimeoutError


def _wake(waiter: "asyncio.Future[None]") -> None:
    if not waiter.done():
        waiter.set_result(None)


class AsyncInbox:
    """Single-consumer queue drained by an asyncio task of ``loop``.

    ``put`` runs on the reader thread. It schedules a wake-up on the loop only when the consumer
    is parked on a future: the reader hands over whole blocks, so a busy stream costs one
    ``call_soon_threadsafe`` per block at most, and none while the consumer is still busy with
    earlier items. The consumer publishes its future *before* looking at the deque again, and
    ``put`` appends *before* looking for a future, so an item is never left without a wake-up.
    """

    __slots__ = ("items", "loop", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.items: Deque[Any] = collections.deque()
        self.loop = loop
        self.waiter: Optional["asyncio.Future[None]"] = None

    def put(self, item: Any) -> None:
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            try:
                self.loop.call_soon_threadsafe(_wake, waiter)
            except RuntimeError:  # the loop is closed: nobody is left to wake
                pass

    async def aget(self, deadline: float = INF) -> Any:
        """Next item; raises ``TimeoutError`` when ``deadline`` (monotonic) passes first."""
        items = self.items
        loop = self.loop
        while True:
            try:
                return items.popleft()
            except IndexError:
                pass
            waiter = loop.create_future()
            self.waiter = waiter
            if items:  # put() ran between popleft and publishing the waiter
                self.waiter = None
                continue
            timer = None
            if deadline != INF:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.waiter = None
                    raise TimeoutError
                timer = loop.call_later(remaining, _wake, waiter)
            try:
                await waiter
            finally:
                self.waiter = None
                if timer is not None:
                    timer.cancel()
            if not items and deadline != INF and time.monotonic() >= deadline:
                raise TimeoutError


AnyInbox = Union[Inbox, AsyncInbox]


class Pending:
    """A request waiting for its response. Prompts also collect their sessions' notifications."""

    __slots__ = ("id", "method", "inbox", "session_ids", "origin_thread")

    def __init__(self, request_id: int, method: str, session_id: Optional[str], inbox: Optional[AnyInbox] = None) -> None:
        self.id = request_id
        self.method = method
        self.inbox: Any = inbox if inbox is not None else Inbox()
        self.session_ids: Set[str] = {session_id} if session_id is not None else set()
        #: The thread that sent the request (a prompt run from inside a client tool is nested).
        self.origin_thread = threading.current_thread().name

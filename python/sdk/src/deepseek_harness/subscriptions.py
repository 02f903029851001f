"""Subscriptions: a stream of the bridge's notifications, beside the prompts that collect them.

:meth:`HarnessClient.subscribe_notifications <deepseek_harness.HarnessClient.subscribe_notifications>`
and :meth:`~deepseek_harness.HarnessClient.subscribe_session_notifications` return a
:class:`NotificationSubscription`. While any subscription is open, the reader decodes every
notification itself (the fast path that leaves decoding to the prompt's consumer is off).
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Iterator, List, Optional, Set, Union

from ._internal.router import Router
from ._internal.subscriber import Subscriber
from .notification import Notification

__all__ = ["NotificationSubscription", "NotificationFilter", "make_predicate"]

#: What :meth:`HarnessClient.subscribe_notifications` takes: None (everything), a method name,
#: a collection of method names, or a predicate.
NotificationFilter = Union[None, str, Collection[str], Callable[[Notification], bool]]


class NotificationSubscription:
    """A stream of notifications, filled by the reader thread, read by any thread.

    Iterate it (blocks until the subscription or the transport is closed), or call
    :meth:`get` with a timeout, or :meth:`drain` for what has arrived so far. Close it when
    done (or use it as a context manager): an open subscription keeps everything it matched.
    """

    def __init__(
        self,
        router: Router,
        predicate: Optional[Callable[[Notification], bool]] = None,
        session_id: Optional[str] = None,
    ) -> None:
        self._router = router
        self._subscriber = Subscriber(predicate, session_id)
        router.subscribe(self._subscriber)

    @property
    def session_ids(self) -> Optional[Set[str]]:
        """For a session subscription: the session and every child learnt from
        ``subagent.started``; None for the others."""
        return self._subscriber.session_ids

    @property
    def closed(self) -> bool:
        return self._subscriber.closed

    def get(self, timeout: Optional[float] = None) -> Optional[Notification]:
        """The next notification; None on timeout, or once closed and drained."""
        return self._subscriber.get(timeout)

    def drain(self) -> List[Notification]:
        """Everything that has arrived and not been read yet, without blocking."""
        return self._subscriber.drain()

    def __iter__(self) -> Iterator[Notification]:
        while True:
            n = self._subscriber.get()
            if n is None:
                return
            yield n

    def close(self) -> None:
        """Stops receiving (what was received stays readable)."""
        self._router.unsubscribe(self._subscriber)
        self._subscriber.end()

    def __enter__(self) -> "NotificationSubscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def make_predicate(filter: NotificationFilter) -> Optional[Callable[[Notification], bool]]:
    """The predicate a :data:`NotificationFilter` stands for (None: everything)."""
    if filter is None:
        return None
    if isinstance(filter, str):
        name = filter
        return lambda n: n.method == name
    if callable(filter):
        return filter
    names = frozenset(filter)
    return lambda n: n.method in names

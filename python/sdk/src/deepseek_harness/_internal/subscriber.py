"""Subscriptions on the reader thread: a :class:`Subscriber` is filled by the reader and read by
any thread; a session subscription follows the session's subagents as ``subagent.started``
reveals them (:func:`learn_child`)."""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional, Set

from ..notification import Notification

__all__ = ["Subscriber", "belongs", "learn_child"]

log = logging.getLogger("deepseek_harness")


class Subscriber:
    """The receiving end of a subscription: filled by the reader thread, read by any thread."""

    def __init__(self, predicate: Optional[Callable[[Notification], bool]], session_id: Optional[str] = None) -> None:
        self.predicate = predicate
        #: For session subscriptions: the session and every child learnt from subagent.started.
        self.session_ids: Optional[Set[str]] = {session_id} if session_id is not None else None
        self.items: Deque[Notification] = collections.deque()
        self.cond = threading.Condition(threading.Lock())
        self.closed = False

    def offer(self, n: Notification) -> None:
        """Called on the reader thread for every decoded notification."""
        ids = self.session_ids
        if ids is not None:
            if not belongs(n, ids):
                return
        elif self.predicate is not None:
            try:
                if not self.predicate(n):
                    return
            except Exception:  # a broken filter must not break the reader
                log.exception("notification filter raised; treating it as no match")
                return
        with self.cond:
            if self.closed:
                return
            self.items.append(n)
            self.cond.notify()

    def end(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def get(self, timeout: Optional[float] = None) -> Optional[Notification]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            while not self.items:
                if self.closed:
                    return None
                if deadline is None:
                    self.cond.wait()
                else:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    self.cond.wait(remaining)
            return self.items.popleft()

    def drain(self) -> List[Notification]:
        with self.cond:
            out = list(self.items)
            self.items.clear()
            return out


def belongs(n: Notification, ids: Set[str]) -> bool:
    p = n.payload
    sid = p.get("sessionId")
    if sid is not None:
        return type(sid) is str and sid in ids
    # Ids that are not strings (unhashable lists, dicts) belong to nobody.
    parent, child = p.get("parentSessionId"), p.get("childSessionId")
    return (type(parent) is str and parent in ids) or (type(child) is str and child in ids)


def learn_child(subs: Iterable[Subscriber], params: Dict[str, Any]) -> None:
    parent = params.get("parentSessionId")
    child = params.get("childSessionId")
    if not isinstance(child, str) or not isinstance(parent, str):
        return
    for s in subs:
        ids = s.session_ids
        if ids is not None and parent in ids:
            ids.add(child)

"""The reader: the routing of every frame of the bridge's stdout (framing.py cuts the lines).

Runs on one daemon thread per client. A response goes to the inbox of its request; a
notification goes to the inbox of the prompt in flight for its session (a subagent's
notifications to the prompt of its parent session, as ``subagent.started`` reveals the child)
and to every subscriber that wants it. When the transport ends, or the reader itself fails,
every waiter fails at once (:meth:`Router.fail_all`): no waiter outlives the reader.

Ordering: a prompt's notifications and finally its response are appended to one inbox, in
stream order, and everything read before a response is handed out before it.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable, Dict, List, Optional, Set

from ..errors import TransportClosedError
from ..notification import Notification
from .decode import DECODE_ERRORS, FAST_LEN, FAST_PREFIX, drop, notification_params, why
from .framing import read_frames
from .inbox import Closed, Pending, Response
from .subscriber import Subscriber, learn_child

__all__ = ["Router", "Subscriber"]

log = logging.getLogger("deepseek_harness")

#: Events the client must answer (client tools, approvals, hooks). With an interceptor set, the
#: reader decodes a fast-path line that may be one (:func:`may_ask`) and hands it over.
ANSWER_TYPES = frozenset({"tool/request", "permission/request", "hook/request"})
# What follows the session id of a fast-path line: the bridge writes the event's type first.
_EVENT_TYPE = b'","event":{"type":"'
_ASKING = (b'tool/request"', b'permission/request"', b'hook/request"')


def may_ask(line: bytes, end: int) -> bool:
    """Whether a fast-path line (its session id ending at ``end``) may be an event to answer.
    O(1): it looks at the type where the bridge writes it. A line laid out otherwise counts as
    a maybe, so it is decoded and checked: a missed request would hang its turn, a needless
    decode only costs time."""
    if not line.startswith(_EVENT_TYPE, end):
        return True
    start = end + len(_EVENT_TYPE)
    return line.startswith(_ASKING[0], start) or line.startswith(_ASKING[1], start) or line.startswith(_ASKING[2], start)

#: Called on the reader thread with an event to answer and the prompt it is routed to (or None).
#: It must not block: it hands the work to a pool or an event loop.
Interceptor = Callable[[Notification, Optional[Pending]], None]


class Router:
    """Who waits for what: requests in flight, the sessions they route, the subscribers.

    ``lock`` guards ``pending``, ``routes``, ``subscribers`` and ``closed_error``; the reader
    reads ``routes`` and ``subscribers`` without it (a tuple is replaced, never mutated; a
    routes list emptied meanwhile is caught)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: Dict[int, Pending] = {}
        # session id → prompts in flight for it (oldest first); children map to their parent's prompt.
        self.routes: Dict[str, List[Pending]] = {}
        self.subscribers: tuple = ()
        #: Set once: every later request fails with it.
        self.closed_error: Optional[TransportClosedError] = None
        #: Who answers ``tool/request`` and ``permission/request`` (set by a harness with client
        #: tools or approvals); ``on_settled`` hears of every prompt answered (its session ids).
        self.interceptor: Optional[Interceptor] = None
        self.on_settled: Optional[Callable[[Set[str]], None]] = None

    def set_interceptor(self, interceptor: Interceptor, on_settled: Callable[[Set[str]], None]) -> None:
        """Sets :attr:`interceptor` and :attr:`on_settled` (before the first prompt is sent)."""
        self.interceptor = interceptor
        self.on_settled = on_settled

    # -- waiters ---------------------------------------------------------------------------

    def add(self, pending: Pending, session_id: Optional[str]) -> None:
        """Registers a request (caller holds ``lock``)."""
        self.pending[pending.id] = pending
        if session_id is not None:
            self.routes.setdefault(session_id, []).append(pending)

    def forget(self, pending: Pending) -> None:
        with self.lock:
            self.pending.pop(pending.id, None)
            self._unroute(pending)

    def _unroute(self, pending: Pending) -> None:
        # Caller holds self.lock.
        for sid in pending.session_ids:
            routes = self.routes.get(sid)
            if routes is not None:
                try:
                    routes.remove(pending)
                except ValueError:
                    pass
                if not routes:
                    del self.routes[sid]

    def subscribe(self, sub: Subscriber) -> None:
        with self.lock:
            if self.closed_error is not None:
                sub.end()
                return
            self.subscribers = self.subscribers + (sub,)

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.lock:
            self.subscribers = tuple(s for s in self.subscribers if s is not sub)

    def fail_all(self, error: TransportClosedError) -> None:
        """The transport ended: every waiter gets :class:`Closed`, every subscriber ends, and
        ``closed_error`` (the first one wins) fails every later request."""
        with self.lock:
            if self.closed_error is None:
                self.closed_error = error
            error = self.closed_error
            pending = list(self.pending.values())
            self.pending.clear()
            self.routes.clear()
            subs = self.subscribers
            self.subscribers = ()
        for p in pending:
            p.inbox.put(Closed(error))
        for s in subs:
            s.end()

    # -- the reader thread -----------------------------------------------------------------

    def read_loop(self, stdout: Any, failed: Callable[[str], TransportClosedError],
                  ended: Callable[[], TransportClosedError]) -> None:
        """Reads stdout until EOF (:func:`read_frames`), routing each block's frames as one
        batch. At EOF every waiter fails with ``ended()``; if the reader itself fails, with
        ``failed(reason)``, and the exception propagates."""
        try:
            read_frames(stdout.read, self.dispatch)
        except BaseException as exc:
            # Invariant: no waiter outlives the reader. Whatever killed it (a bug, a frame no
            # guard foresaw), every pending call and every later one fails at once, naming it.
            log.error("the harness-bridge reader thread failed; failing every call", exc_info=True)
            self.fail_all(failed(
                f"the SDK's reader thread failed ({type(exc).__name__}: {exc}); this client "
                f"cannot be used any more: close it and start a new one"))
            raise
        self.fail_all(ended())

    def dispatch(self, lines: List[bytes]) -> None:
        """Routes the frames of one block, in order. Runs on the reader thread only."""
        loads = json.loads
        routes = self.routes
        batches: Dict[Pending, List[Any]] = {}
        subs = self.subscribers
        intercept = self.interceptor
        owner: Optional[Pending]
        for line in lines:
            if not line:
                continue
            if not subs and line.startswith(FAST_PREFIX):
                # The fast path: routed by the session id of the prefix, decoded by the consumer.
                end = line.find(b'"', FAST_LEN)
                if end > 0 and b"\\" not in line[FAST_LEN:end] and (intercept is None or not may_ask(line, end)):
                    targets = routes.get(line[FAST_LEN:end].decode("utf-8", "replace"))
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
            except DECODE_ERRORS as exc:
                if line.strip():
                    log.warning("dropping a line that cannot be decoded (%s): %r", why(exc), line[:200])
                continue
            params = notification_params(msg)
            if params is not None:
                sid = params.get("sessionId")
                if sid is not None and type(sid) is not str:
                    # An unhashable id would raise in the route lookup and kill this thread.
                    log.warning("dropping a notification whose sessionId is not a string: %r", line[:200])
                    continue
                n = Notification(msg["method"], params)
                owner = None
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
                if intercept is not None and sid is not None and n.method == "session.event":
                    self._intercept(intercept, n, owner)
                if subs:
                    if n.method == "subagent.started":
                        learn_child(subs, params)
                    for sub in subs:
                        sub.offer(n)
                continue
            if type(msg) is dict and msg.get("method") is None and ("result" in msg or "error" in msg):
                self._respond(msg, batches)
                continue
            drop(line, msg)
        for owner, batch in batches.items():
            owner.inbox.put(batch)

    @staticmethod
    def _intercept(intercept: Interceptor, n: Notification, owner: Optional[Pending]) -> None:
        event = n.payload.get("event")
        if type(event) is dict and event.get("type") in ANSWER_TYPES:
            try:
                intercept(n, owner)
            except Exception:  # a failing answerer must not kill the reader; the bridge times the wait out
                log.exception("could not hand a %s to its answerer", event.get("type"))

    def _respond(self, msg: Dict[str, Any], batches: Dict[Pending, List[Any]]) -> None:
        request_id = msg.get("id")
        pending = None
        if type(request_id) is int:
            with self.lock:
                pending = self.pending.pop(request_id, None)
                if pending is not None:
                    self._unroute(pending)
        if pending is None:
            if request_id is None and "error" in msg:
                log.warning("harness-bridge reported an error for no request: %r", msg.get("error"))
            else:
                log.debug("dropping a response for no pending request: id=%r", request_id)
            return
        settled = self.on_settled
        if settled is not None and pending.method == "session/prompt":
            try:
                settled(set(pending.session_ids))
            except Exception:
                log.exception("the prompt-settled hook failed")
        # Everything read before this response goes out first.
        if batches:
            for owner, batch in batches.items():
                owner.inbox.put(batch)
            batches.clear()
        pending.inbox.put(Response(msg))

    def _route_subagent(self, n: Notification, params: Dict[str, Any]) -> Optional[Pending]:
        parent = params.get("parentSessionId")
        child = params.get("childSessionId")
        with self.lock:
            targets = self.routes.get(parent) if isinstance(parent, str) else None
            if not targets:
                return None
            owner = targets[0]
            if n.method == "subagent.started" and isinstance(child, str) and child not in owner.session_ids:
                owner.session_ids.add(child)
                self.routes.setdefault(child, []).append(owner)
        return owner

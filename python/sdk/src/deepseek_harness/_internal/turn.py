"""What the blocking and the asyncio fronts share above the prompt call: the turn collector
(notifications -> :class:`~deepseek_harness.TurnResult`) and the stream buffer (batches ->
one typed event at a time)."""

from __future__ import annotations

import collections
from typing import Any, Deque, Dict, List, Optional

from ..notification import Notification
from ..results import TurnResult, final_response_of, output_of, usage_of
from ..turn_control import SessionCosts
from ..wire import LIVE_ONLY_EVENT_TYPES, SessionEvent, SessionPromptResponse
from .output import OutputSpec
from .decode import NotificationCallback, decode_batch
from .connection import Connection
from .inbox import AnyInbox
from .prompt import PromptCall, PromptInput

__all__ = ["TurnCollector", "StreamBuffer"]


class TurnCollector:
    """Builds a :class:`TurnResult` from the notifications of one turn, as they are delivered
    (shared by ``run`` and the streams, sync and async). ``add`` runs once per notification:
    it only appends and looks at two dict keys. ``costs``: the harness's per-session tally, which
    the result's cost joins when it is built, so a turn counts however it was run."""

    __slots__ = ("session_id", "notifications", "durable", "callback", "output", "costs")

    def __init__(self, session_id: str, callback: Optional[NotificationCallback] = None,
                 output: Optional[OutputSpec] = None, costs: Optional[SessionCosts] = None) -> None:
        self.session_id = session_id
        self.output = output
        self.costs = costs
        self.notifications: List[Notification] = []
        self.durable: List[Dict[str, Any]] = []
        self.callback = callback

    @property
    def keep_chunk(self) -> Optional[NotificationCallback]:
        """Where chunks may go undecoded: only kept, when no callback of the caller sees them
        (their events are live-only, so they are not durable either)."""
        return self.notifications.append if self.callback is None else None

    def add(self, n: Notification) -> None:
        self.notifications.append(n)
        if n.method == "session.event":
            p = n.payload
            ev = p.get("event")
            if p.get("sessionId") == self.session_id and isinstance(ev, dict) and ev.get("type") not in LIVE_ONLY_EVENT_TYPES:
                self.durable.append(ev)
        if self.callback is not None:
            self.callback(n)

    def result(self, response: SessionPromptResponse) -> "TurnResult":
        events = [SessionEvent.model_validate(ev) for ev in self.durable]
        value = output_of(events)
        usage = usage_of(events)
        # The turn ran and cost whatever the caller makes of its output: counted before the
        # output is parsed, which raises when ``output_type`` refuses it (a validator stricter
        # than the schema the bridge checked); the session's cost was then short by this turn.
        if self.costs is not None:
            self.costs.add(self.session_id, usage.cost_usd if usage is not None else None)
        return TurnResult(
            session_id=self.session_id,
            status=response.status,
            reason=response.reason,
            final_response=final_response_of(events),
            events=events,
            notifications=self.notifications,
            usage=usage,
            output=self.output.parse(value) if self.output is not None and value is not None else value,
        )


class StreamBuffer:
    """The part of a turn stream that does not depend on how it waits: it sends the prompt
    (:meth:`open`, with ``output``'s schema and ``max_cost_usd`` as ``run`` sends them), takes
    the batches of its :class:`PromptCall`, records them for the :class:`TurnResult` (its
    ``output`` parsed as ``run`` parses it, its cost added to ``costs``), and hands out one
    typed event at a time (built when it is handed out, not before)."""

    def __init__(self, session_id: str, costs: Optional[SessionCosts] = None, output: Optional[OutputSpec] = None,
                 max_cost_usd: Optional[float] = None) -> None:
        self.session_id = session_id
        self.max_cost_usd = max_cost_usd
        self.collector = TurnCollector(session_id, None, output, costs)
        self.queue: Deque[Notification] = collections.deque()
        self.call: Optional[PromptCall] = None
        #: The turn's result, once the stream has yielded it.
        self.result: Optional[TurnResult] = None
        #: True once nothing more will be yielded (the result, an error, or closed early).
        self.finished = False

    def open(self, client: Connection, input: PromptInput, inbox: Optional[AnyInbox] = None) -> PromptCall:
        """Sends the turn's prompt (``inbox``: the asyncio front's; without one the call blocks)."""
        output = self.collector.output
        self.call = PromptCall(client, self.session_id, input, None, inbox,
                               output.schema if output is not None else None, self.max_cost_usd)
        return self.call

    def take(self, batch: List[Any]) -> None:
        notifications = decode_batch(batch)
        add = self.collector.add
        for n in notifications:
            add(n)
        self.queue.extend(notifications)

    def settle(self) -> TurnResult:
        assert self.call is not None and self.call.response is not None
        self.finished = True
        self.result = self.collector.result(self.call.response)
        return self.result

    @property
    def in_flight(self) -> bool:
        """Started and not yet answered: closing now must cancel the turn."""
        return self.call is not None and not self.call.settled

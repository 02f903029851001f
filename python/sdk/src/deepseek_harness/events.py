"""Typed events of a streamed turn: what ``Session.stream`` / ``AsyncSession.stream`` yield.

One model per session event type of the protocol (``user/message``, ``turn/start``,
``step/start``, ``assistant/chunk``, ``assistant/message``, ``tool/result``, ``turn/end``; the
client tools' and approvals' ``tool/request``, ``permission/request``,
``permission/decision``; steering's ``user/steer``; structured output's ``output/reminder``;
``context/compacted``; the checkpoints' ``checkpoint``, ``checkpoint/skipped`` and
``session/rewound``; the hooks' ``hook/request`` and ``hook/decision``) and
per subagent notification (``subagent.started``, ``subagent.finished``). A session event's
``data`` fields sit on the event itself, next to ``session_id``, ``type``, ``seq`` and ``time``
(``ev.text``, not ``ev.data["chunk"]["text"]``). ``assistant/chunk`` has one subclass per chunk
kind (:class:`TextDeltaEvent`, :class:`ReasoningDeltaEvent`, :class:`ToolCallDeltaEvent`), so
``isinstance`` picks out text and reasoning deltas; their ``type`` stays ``"assistant/chunk"``,
as on the wire.

Anything else — an event type, chunk kind or notification method this SDK does not know, or
a known one whose data does not fit its model — becomes an :class:`UnknownEvent` holding the
notification's params dict untouched, so a newer bridge never breaks an older SDK's stream.

The models live in two modules: the core events every turn streams, with the bases and the
subagent notifications (:mod:`.turn_events`), and the events of the features layered on a
turn (:mod:`.feature_events`). This module keeps the registry (event type → class) and the
decoding, and re-exports every name of both, so ``from deepseek_harness.events import X``
works for each of them.

These models are built only for stream consumers, one per notification, by
:func:`event_from_notification`; the ``on_notification`` path never validates anything.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Optional, Type

from pydantic import ValidationError

from .feature_events import (
    CheckpointEvent,
    CheckpointSkippedEvent,
    ContextCompactedEvent,
    HookDecisionEvent,
    HookRequestEvent,
    OutputReminderEvent,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    SessionRewoundEvent,
    ToolRequestEvent,
    UserSteer,
    UserSteerEvent,
)
from .models import Notification
from .turn_events import (
    AssistantBlock,
    AssistantChunkEvent,
    AssistantMessageEvent,
    BaseSessionEvent,
    ReasoningDelta,
    ReasoningDeltaEvent,
    ResultBlock,
    StepStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDelta,
    TextDeltaEvent,
    ToolCallDelta,
    ToolCallDeltaEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEvent,
    TurnStartEvent,
    UserMessageEvent,
)


__all__ = [
    "TurnEvent",
    "BaseSessionEvent",
    "UserMessageEvent",
    "UserSteer",
    "UserSteerEvent",
    "TurnStartEvent",
    "StepStartEvent",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "AssistantChunkEvent",
    "TextDeltaEvent",
    "ReasoningDeltaEvent",
    "ToolCallDeltaEvent",
    "AssistantMessageEvent",
    "ToolResultEvent",
    "ToolRequestEvent",
    "PermissionRequestEvent",
    "PermissionDecisionEvent",
    "TurnEndEvent",
    "OutputReminderEvent",
    "ContextCompactedEvent",
    "CheckpointEvent",
    "CheckpointSkippedEvent",
    "SessionRewoundEvent",
    "HookRequestEvent",
    "HookDecisionEvent",
    "SubagentStartedEvent",
    "SubagentFinishedEvent",
    "UnknownEvent",
    "event_from_notification",
]

log = logging.getLogger("deepseek_harness")


class UnknownEvent(TurnEvent):
    """A notification this SDK has no model for, passed through untouched: ``params`` is the
    notification's params dict itself (for a ``session.event``: ``{sessionId, event}``)."""

    method: str
    params: Dict[str, Any]

    @property
    def type(self) -> Optional[str]:
        """The event type of a ``session.event``, else None."""
        ev = self.params.get("event") if self.method == "session.event" else None
        return ev.get("type") if isinstance(ev, dict) else None

    @property
    def session_id(self) -> Optional[str]:
        sid = self.params.get("sessionId", self.params.get("parentSessionId"))
        return sid if isinstance(sid, str) else None


_SESSION_EVENTS: Dict[str, Type[BaseSessionEvent]] = {
    "user/message": UserMessageEvent,
    "turn/start": TurnStartEvent,
    "step/start": StepStartEvent,
    "assistant/chunk": AssistantChunkEvent,
    "assistant/message": AssistantMessageEvent,
    "tool/result": ToolResultEvent,
    "tool/request": ToolRequestEvent,
    "permission/request": PermissionRequestEvent,
    "permission/decision": PermissionDecisionEvent,
    "turn/end": TurnEndEvent,
    "output/reminder": OutputReminderEvent,
    "context/compacted": ContextCompactedEvent,
    "user/steer": UserSteer,
    "checkpoint": CheckpointEvent,
    "checkpoint/skipped": CheckpointSkippedEvent,
    "session/rewound": SessionRewoundEvent,
    "hook/request": HookRequestEvent,
    "hook/decision": HookDecisionEvent,
}
_CHUNKS: Dict[str, Type[AssistantChunkEvent]] = {
    "text-delta": TextDeltaEvent,
    "reasoning-delta": ReasoningDeltaEvent,
    "tool-call-delta": ToolCallDeltaEvent,
}
_NOTIFICATIONS: Dict[str, Type[TurnEvent]] = {
    "subagent.started": SubagentStartedEvent,
    "subagent.finished": SubagentFinishedEvent,
}


def event_from_notification(n: Notification) -> TurnEvent:
    """The typed event of one notification (an :class:`UnknownEvent` when there is none)."""
    method = n.method
    payload = n.payload
    cls: Optional[Type[TurnEvent]]
    if method == "session.event":
        ev = payload.get("event")
        if type(ev) is not dict:
            return UnknownEvent.model_construct(method=method, params=payload)
        cls = _SESSION_EVENTS.get(ev.get("type"))  # type: ignore[arg-type]
        if cls is None:
            return UnknownEvent.model_construct(method=method, params=payload)
        data = ev.get("data")
        fields = dict(data) if type(data) is dict else {}
        if cls is AssistantChunkEvent:
            chunk = fields.get("chunk")
            kind = chunk.get("type") if type(chunk) is dict else None
            cls = _CHUNKS.get(kind, AssistantChunkEvent)  # type: ignore[arg-type]
        # The envelope wins over a data field of the same name (there is none today).
        fields["sessionId"] = payload.get("sessionId")
        fields["type"] = ev.get("type")
        fields["seq"] = ev.get("seq")
        fields["time"] = ev.get("time")
    else:
        cls = _NOTIFICATIONS.get(method)
        if cls is None:
            return UnknownEvent.model_construct(method=method, params=payload)
        fields = payload
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        log.warning("a %s notification does not fit %s; passing it through as UnknownEvent: %s",
                    method, cls.__name__, exc)
        return UnknownEvent.model_construct(method=method, params=payload)
    except RecursionError:
        # A payload nested deeper than the stack allows (the model controls tool arguments):
        # passed through untyped rather than raised into run()/stream().
        log.warning("a %s notification is nested too deep for %s; passing it through as UnknownEvent",
                    method, cls.__name__)
        return UnknownEvent.model_construct(method=method, params=payload)

"""Decoding a notification into the typed event a turn stream yields:
:func:`event_from_notification`.

The event models are in :mod:`deepseek_harness.wire` (:mod:`~deepseek_harness.wire.turn_events`,
:mod:`~deepseek_harness.wire.feature_events`), and which class types each wire event type in
:mod:`~deepseek_harness.wire.event_types`. A session event's ``data`` fields sit on the event
itself, next to ``session_id``, ``type``, ``seq`` and ``time`` (``ev.text``, not
``ev.data["chunk"]["text"]``); an ``assistant/chunk`` comes as the subclass of its chunk's kind
(``TextDeltaEvent``, ...), its ``type`` still ``"assistant/chunk"`` as on the wire. Anything else
(an event type, chunk kind or notification method this SDK does not know, or a known one whose
data does not fit its model) becomes an :class:`UnknownEvent` holding the notification's params
dict untouched, so a newer bridge never breaks an older SDK's stream.

The events are built only for stream consumers, one per notification; the ``on_notification``
path never validates anything. This module also re-exports every event class, a compatibility
alias for ``from deepseek_harness.events import X`` (the same objects as in the wire package).
"""

from __future__ import annotations

import logging
from typing import Optional, Type

from pydantic import ValidationError

from .notification import Notification
from .wire import (
    CHUNK_TYPES,
    NOTIFICATION_EVENTS,
    SESSION_EVENT_TYPES,
    AssistantChunkEvent,
    AssistantMessageEvent,
    BaseSessionEvent,
    CheckpointEvent,
    CheckpointSkippedEvent,
    ContextCompactedEvent,
    HookDecisionEvent,
    HookRequestEvent,
    OutputReminderEvent,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    ReasoningDelta,
    ReasoningDeltaEvent,
    SessionRewoundEvent,
    StepStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDelta,
    TextDeltaEvent,
    ToolCallDelta,
    ToolCallDeltaEvent,
    ToolRequestEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEvent,
    TurnStartEvent,
    UnknownEvent,
    UserMessageEvent,
    UserSteer,
    UserSteerEvent,
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


def event_from_notification(n: Notification) -> TurnEvent:
    """The typed event of one notification (an :class:`UnknownEvent` when there is none)."""
    method = n.method
    payload = n.payload
    cls: Optional[Type[TurnEvent]]
    if method == "session.event":
        ev = payload.get("event")
        if type(ev) is not dict:
            return UnknownEvent.model_construct(method=method, params=payload)
        cls = SESSION_EVENT_TYPES.get(ev.get("type"))  # type: ignore[arg-type]
        if cls is None:
            return UnknownEvent.model_construct(method=method, params=payload)
        data = ev.get("data")
        fields = dict(data) if type(data) is dict else {}
        if cls is AssistantChunkEvent:
            chunk = fields.get("chunk")
            kind = chunk.get("type") if type(chunk) is dict else None
            cls = CHUNK_TYPES.get(kind, AssistantChunkEvent)  # type: ignore[arg-type]
        # The envelope wins over a data field of the same name (there is none today).
        fields["sessionId"] = payload.get("sessionId")
        fields["type"] = ev.get("type")
        fields["seq"] = ev.get("seq")
        fields["time"] = ev.get("time")
    else:
        cls = NOTIFICATION_EVENTS.get(method)
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

"""Which class types each event of the wire: a session event by its ``type`` (an
``assistant/chunk`` by its chunk's kind), a notification other than ``session.event`` by its
method. A type missing here streams as :class:`UnknownEvent`; tests/test_wire_shape.py holds
these tables equal to the bridge's event types and notifications.
:func:`deepseek_harness.events.event_from_notification` decodes with them.
"""

from __future__ import annotations

from typing import Dict, Type

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
)
from .turn_events import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    BaseSessionEvent,
    ReasoningDeltaEvent,
    StepStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDeltaEvent,
    ToolCallDeltaEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEvent,
    TurnStartEvent,
    UserMessageEvent,
)

__all__ = ["SESSION_EVENT_TYPES", "CHUNK_TYPES", "NOTIFICATION_EVENTS"]

#: The class of each session event type.
SESSION_EVENT_TYPES: Dict[str, Type[BaseSessionEvent]] = {
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

#: The subclass of :class:`AssistantChunkEvent` of each chunk kind (another kind: the base class).
CHUNK_TYPES: Dict[str, Type[AssistantChunkEvent]] = {
    "text-delta": TextDeltaEvent,
    "reasoning-delta": ReasoningDeltaEvent,
    "tool-call-delta": ToolCallDeltaEvent,
}

#: The class of each notification method other than ``session.event``.
NOTIFICATION_EVENTS: Dict[str, Type[TurnEvent]] = {
    "subagent.started": SubagentStartedEvent,
    "subagent.finished": SubagentFinishedEvent,
}

"""What the bridge's notifications carry: the session event envelope and the params of each
notification method (``session.event``, ``subagent.started``, ``subagent.finished``).

The typed event of each session event type is in :mod:`.turn_events` and :mod:`.feature_events`;
:class:`deepseek_harness.Notification` (a frame as it arrived, validated lazily) types its params
with :data:`NOTIFICATION_PARAMS`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Type

from pydantic import Field

from .base import WireModel
from .usage import TurnEndReason

__all__ = [
    "LIVE_ONLY_EVENT_TYPES",
    "SessionEvent",
    "SessionEventParams",
    "SubagentStartedParams",
    "SubagentFinishedParams",
    "NOTIFICATION_PARAMS",
]

#: Event types that are streamed but never written to the durable log.
LIVE_ONLY_EVENT_TYPES = frozenset({"assistant/chunk"})


class SessionEvent(WireModel):
    """One session event. ``data`` is kept as the decoded dict (see PROTOCOL.md's table)."""

    type: str
    seq: int
    time: int
    data: Dict[str, Any] = Field(default_factory=dict)

    @property
    def live_only(self) -> bool:
        """True for events that are streamed but never logged (``assistant/chunk``)."""
        return self.type in LIVE_ONLY_EVENT_TYPES


class SessionEventParams(WireModel):
    """Params of ``session.event``."""

    session_id: str
    event: SessionEvent


class SubagentStartedParams(WireModel):
    """Params of ``subagent.started``."""

    parent_session_id: str
    child_session_id: str


class SubagentFinishedParams(WireModel):
    """Params of ``subagent.finished``."""

    provider: str
    agent_id: str
    parent_session_id: str
    child_session_id: str
    status: str
    stop_reason: TurnEndReason
    last_assistant_message: Optional[List[Dict[str, Any]]] = None


#: The params model of each notification method the protocol has.
NOTIFICATION_PARAMS: Dict[str, Type[WireModel]] = {
    "session.event": SessionEventParams,
    "subagent.started": SubagentStartedParams,
    "subagent.finished": SubagentFinishedParams,
}

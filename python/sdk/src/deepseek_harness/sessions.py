"""A session's logged history as typed events: :func:`history_event`.

The sessions API's wire types (``SessionInfo`` and each method's result) are in
:mod:`deepseek_harness.wire`; the names this module has always exported are re-exported here, the
same objects (a compatibility alias).
"""

from __future__ import annotations

from typing import Any, Dict, Union

from .events import event_from_notification
from .notification import Notification
from .wire import (
    READ_LIMIT_DEFAULT,
    READ_LIMIT_MAX,
    SessionDeleteResponse,
    SessionEvent,
    SessionForkResponse,
    SessionInfo,
    SessionListResponse,
    SessionReadResponse,
    TurnEvent,
)

__all__ = [
    "READ_LIMIT_DEFAULT",
    "READ_LIMIT_MAX",
    "SessionInfo",
    "SessionListResponse",
    "SessionReadResponse",
    "SessionForkResponse",
    "SessionDeleteResponse",
    "history_event",
]


def history_event(session_id: str, event: Union[SessionEvent, Dict[str, Any]]) -> TurnEvent:
    """The typed event (as a turn stream yields it) of one logged event of ``session_id``."""
    raw = event.model_dump(by_alias=True) if isinstance(event, SessionEvent) else event
    return event_from_notification(Notification("session.event", {"sessionId": session_id, "event": raw}))

"""Wire models of the sessions API (``session/list``, ``session/read``, ``session/fork``,
``session/delete``; docs/PROTOCOL.md, "Sessions API") and the typed view of a session's
logged history.

Field names are snake_case here and camelCase on the wire, as in :mod:`deepseek_harness.models`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import Field

from .events import TurnEvent, event_from_notification
from .models import Notification, SessionEvent, WireModel

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

#: Events per ``session/read`` page when no limit is given (the bridge's default).
READ_LIMIT_DEFAULT = 200
#: The largest ``limit`` the bridge accepts.
READ_LIMIT_MAX = 1000


class SessionInfo(WireModel):
    """One session of the workspace, as ``session/list`` gives it."""

    session_id: str
    #: The first user message, whitespace collapsed, at most 80 characters ("…" when cut); "" before the first prompt.
    title: str
    #: Epoch milliseconds.
    created_at: int
    #: Epoch milliseconds of the last logged event (of the fork itself, for a fork that has run no turn).
    updated_at: int
    #: Turns started in the session (a fork counts those it copied).
    turns: int
    #: The parent of a subagent session (``origin == "task"``) or the source of a fork (``origin == "fork"``).
    parent_session_id: Optional[str] = None
    origin: Optional[Union[Literal["task", "fork"], str]] = None


class SessionListResponse(WireModel):
    """Result of ``session/list``: newest ``updated_at`` first; ``log_folder``: the absolute
    folder of this workspace's logs (``<log_folder>/<session_id>.jsonl``), None when the bridge
    keeps none (``--no-session-log``)."""

    sessions: List[SessionInfo] = Field(default_factory=list)
    log_folder: Optional[str] = None


class SessionReadResponse(WireModel):
    """Result of ``session/read``: a page of logged events; ``next_seq`` (when present) is the
    ``after_seq`` of the next page."""

    events: List[SessionEvent] = Field(default_factory=list)
    next_seq: Optional[int] = None


class SessionForkResponse(WireModel):
    """Result of ``session/fork``: the new session's id."""

    session_id: str


class SessionDeleteResponse(WireModel):
    """Result of ``session/delete``: False when there was no such session."""

    deleted: bool


def history_event(session_id: str, event: Union[SessionEvent, Dict[str, Any]]) -> TurnEvent:
    """The typed event (as a turn stream yields it) of one logged event of ``session_id``."""
    raw = event.model_dump(by_alias=True) if isinstance(event, SessionEvent) else event
    return event_from_notification(Notification("session.event", {"sessionId": session_id, "event": raw}))

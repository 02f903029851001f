"""The sessions API on the wire (``session/list``, ``session/read``, ``session/fork``,
``session/delete``; docs/PROTOCOL.md, "Sessions API"): each method's params and result, and the
page limits of ``session/read``."""

from __future__ import annotations

from typing import List, Literal, Optional, TypedDict, Union

from pydantic import Field

from .base import WireModel
from .methods import SessionIdParams
from .notification_params import SessionEvent

__all__ = [
    "READ_LIMIT_DEFAULT",
    "READ_LIMIT_MAX",
    "SessionListParams",
    "SessionReadParams",
    "SessionForkParams",
    "SessionDeleteParams",
    "SessionInfo",
    "SessionListResponse",
    "SessionReadResponse",
    "SessionForkResponse",
    "SessionDeleteResponse",
]

#: Events per ``session/read`` page when no limit is given (the bridge's default).
READ_LIMIT_DEFAULT = 200
#: The largest ``limit`` the bridge accepts.
READ_LIMIT_MAX = 1000


class SessionListParams(TypedDict):
    """None."""


class SessionReadParams(SessionIdParams, total=False):
    afterSeq: int
    limit: int


class _ForkRequired(TypedDict):
    sessionId: str
    newSessionId: str


class SessionForkParams(_ForkRequired, total=False):
    turn: int


#: ``session/delete`` takes the session's id only.
SessionDeleteParams = SessionIdParams


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

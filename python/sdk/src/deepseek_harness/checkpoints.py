"""Checkpoints and rewind (docs/checkpoints.md; docs/PROTOCOL.md, "Checkpoints"): the wire
models of ``session/rewind`` and the requests behind :meth:`Session.rewind
<deepseek_harness.Session.rewind>` and :meth:`Session.checkpoints
<deepseek_harness.Session.checkpoints>`, shared by the blocking and the asyncio fronts.

A session's checkpoints are read from its log: each ``checkpoint`` event of a turn still in
the history (a ``session/rewound`` drops the turns it cut; a rewind's own checkpoint comes
after its ``session/rewound``).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Iterable, List, Optional, TypedDict

from pydantic import Field


from ._internal.connection import Connection, arequest, request, validate
from ._internal.session_requests import ahistory, history
from .events import CheckpointEvent, SessionRewoundEvent, TurnEvent
from .models import WireModel

__all__ = [
    "SessionRewindParams", "UnrestoredTurn", "RewindResult", "CheckpointInfo",
    "rewind_session", "arewind_session", "list_checkpoints", "alist_checkpoints",
]


class _RewindRequired(TypedDict):
    sessionId: str
    turn: int


class SessionRewindParams(_RewindRequired, total=False):
    """Params of ``session/rewind``."""

    files: bool
    conversation: bool
    force: bool


class UnrestoredTurn(WireModel):
    """What a rewind could not put back of one turn: the writing ``tools`` no checkpoint covered
    (a ``files`` checkpoint: ``bash``, ``task``, client and MCP tools), and the ``paths`` whose
    previous content was not kept (``checkpoint/skipped``)."""

    turn: int
    tools: List[str] = Field(default_factory=list)
    paths: List[str] = Field(default_factory=list)


class RewindResult(WireModel):
    """Result of ``session/rewind``: workspace-relative paths written back (``restored``),
    created by the undone turns and removed (``removed``), changed by someone else since and
    left alone (``conflicts``: rewind again with ``force=True`` to overwrite them), and what
    could not be restored (``unrestored``)."""

    restored: List[str] = Field(default_factory=list)
    removed: List[str] = Field(default_factory=list)
    conflicts: List[str] = Field(default_factory=list)
    unrestored: List[UnrestoredTurn] = Field(default_factory=list)


class CheckpointInfo(WireModel):
    """One turn's checkpoint: ``kind`` ``"git"`` or ``"files"``, the number of ``files`` it
    changed, and the writing tools it does not cover (``uncovered``). A rewind that changed
    files has one too, under a turn number of its own: ``rewind`` is the turn it went back to,
    and ``Session.rewind(turn, conversation=False)`` undoes it (docs/checkpoints.md)."""

    turn: int
    kind: str
    files: int
    uncovered: List[str] = Field(default_factory=list)
    rewind: Optional[int] = None


def _params(session_id: str, turn: int, files: bool, conversation: bool, force: bool) -> SessionRewindParams:
    return {"sessionId": session_id, "turn": turn, "files": files, "conversation": conversation, "force": force}


def rewind_session(conn: Connection, session_id: str, turn: int, files: bool = True, conversation: bool = True,
                   force: bool = False, timeout: Optional[float] = None) -> RewindResult:
    result = request(conn, "session/rewind", _params(session_id, turn, files, conversation, force), timeout=timeout)
    out: RewindResult = validate(RewindResult, result, "session/rewind")
    return out


async def arewind_session(conn: Connection, session_id: str, turn: int, files: bool = True, conversation: bool = True,
                          force: bool = False, timeout: Optional[float] = None) -> RewindResult:
    result = await arequest(conn, "session/rewind", _params(session_id, turn, files, conversation, force), timeout=timeout)
    out: RewindResult = validate(RewindResult, result, "session/rewind")
    return out


class _Collector:
    """Keeps the checkpoints of the turns still in the history, event by event."""

    def __init__(self) -> None:
        self.by_turn: Dict[int, CheckpointInfo] = {}

    def add(self, event: Any) -> None:
        if isinstance(event, CheckpointEvent):
            self.by_turn[event.turn] = CheckpointInfo(turn=event.turn, kind=event.kind, files=event.files,
                                                      uncovered=list(event.uncovered or []), rewind=event.rewind)
        elif isinstance(event, SessionRewoundEvent):
            for turn in [t for t in self.by_turn if t >= event.turn]:
                del self.by_turn[turn]

    def result(self) -> List[CheckpointInfo]:
        return [self.by_turn[t] for t in sorted(self.by_turn)]


def _collect(events: Iterable[TurnEvent]) -> List[CheckpointInfo]:
    c = _Collector()
    for event in events:
        c.add(event)
    return c.result()


def list_checkpoints(conn: Connection, session_id: str) -> List[CheckpointInfo]:
    """The checkpoints of the session's turns still in its history, by turn."""
    return _collect(history(conn, session_id))


async def alist_checkpoints(conn: Connection, session_id: str) -> List[CheckpointInfo]:
    c = _Collector()
    events: AsyncIterator[TurnEvent] = ahistory(conn, session_id)
    async for event in events:
        c.add(event)
    return c.result()

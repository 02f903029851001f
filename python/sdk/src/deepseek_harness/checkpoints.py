"""Checkpoints and rewind (docs/checkpoints.md; docs/PROTOCOL.md, "Checkpoints"): the requests
behind :meth:`Session.rewind <deepseek_harness.Session.rewind>` and :meth:`Session.checkpoints
<deepseek_harness.Session.checkpoints>`, shared by the blocking and the asyncio fronts.

A session's checkpoints are read from its log: each ``checkpoint`` event of a turn still in
the history (a ``session/rewound`` drops the turns it cut; a rewind's own checkpoint comes
after its ``session/rewound``).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Iterable, List, Optional

from ._internal.connection import Connection, arequest, request, validate
from ._internal.session_requests import ahistory, history
from .wire import (
    CheckpointEvent, CheckpointInfo, RewindResult, SessionRewindParams, SessionRewoundEvent, TurnEvent, UnrestoredTurn,
)

# The wire types are defined in deepseek_harness.wire; they stay importable from here, the same objects.
__all__ = [
    "SessionRewindParams", "UnrestoredTurn", "RewindResult", "CheckpointInfo",
    "rewind_session", "arewind_session", "list_checkpoints", "alist_checkpoints",
]


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

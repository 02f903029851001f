"""The sessions API requests, shared by the blocking and the asyncio fronts: their params, the
validation of their results, history paging, and where a session's log lives (the folder the
bridge reports in ``session/list``)."""

from __future__ import annotations

from pathlib import Path
from typing import AsyncIterator, Iterator, Optional

from ..sessions import history_event
from ..wire import (
    READ_LIMIT_DEFAULT,
    SessionCompactParams,
    SessionCompactResponse,
    SessionDeleteParams,
    SessionDeleteResponse,
    SessionForkParams,
    SessionForkResponse,
    SessionListParams,
    SessionListResponse,
    SessionReadParams,
    SessionReadResponse,
    TurnEvent,
)
from .connection import Connection, arequest, request, validate

__all__ = [
    "list_sessions", "alist_sessions", "read_page", "aread_page", "fork_session", "afork_session",
    "delete_session", "adelete_session", "compact_session", "acompact_session", "history", "ahistory", "log_path",
]

_NO_PARAMS: SessionListParams = {}


def _read_params(session_id: str, after_seq: Optional[int], limit: Optional[int]) -> SessionReadParams:
    params: SessionReadParams = {"sessionId": session_id}
    if after_seq is not None:
        params["afterSeq"] = after_seq
    if limit is not None:
        params["limit"] = limit
    return params


def _fork_params(session_id: str, new_session_id: str, turn: Optional[int]) -> SessionForkParams:
    params: SessionForkParams = {"sessionId": session_id, "newSessionId": new_session_id}
    if turn is not None:
        params["turn"] = turn
    return params


def list_sessions(conn: Connection, timeout: Optional[float] = None) -> SessionListResponse:
    result = request(conn, "session/list", _NO_PARAMS, timeout=timeout)
    listed: SessionListResponse = validate(SessionListResponse, result, "session/list")
    return listed


async def alist_sessions(conn: Connection, timeout: Optional[float] = None) -> SessionListResponse:
    result = await arequest(conn, "session/list", _NO_PARAMS, timeout=timeout)
    listed: SessionListResponse = validate(SessionListResponse, result, "session/list")
    return listed


def read_page(conn: Connection, session_id: str, after_seq: Optional[int] = None, limit: Optional[int] = None,
              timeout: Optional[float] = None) -> SessionReadResponse:
    result = request(conn, "session/read", _read_params(session_id, after_seq, limit), timeout=timeout)
    page: SessionReadResponse = validate(SessionReadResponse, result, "session/read")
    return page


async def aread_page(conn: Connection, session_id: str, after_seq: Optional[int] = None, limit: Optional[int] = None,
                     timeout: Optional[float] = None) -> SessionReadResponse:
    result = await arequest(conn, "session/read", _read_params(session_id, after_seq, limit), timeout=timeout)
    page: SessionReadResponse = validate(SessionReadResponse, result, "session/read")
    return page


def fork_session(conn: Connection, session_id: str, new_session_id: str, turn: Optional[int] = None,
                 timeout: Optional[float] = None) -> str:
    result = request(conn, "session/fork", _fork_params(session_id, new_session_id, turn), timeout=timeout)
    return str(validate(SessionForkResponse, result, "session/fork").session_id)


async def afork_session(conn: Connection, session_id: str, new_session_id: str, turn: Optional[int] = None,
                        timeout: Optional[float] = None) -> str:
    result = await arequest(conn, "session/fork", _fork_params(session_id, new_session_id, turn), timeout=timeout)
    return str(validate(SessionForkResponse, result, "session/fork").session_id)


def delete_session(conn: Connection, session_id: str, timeout: Optional[float] = None) -> bool:
    result = request(conn, "session/delete", SessionDeleteParams(sessionId=session_id), timeout=timeout)
    return bool(validate(SessionDeleteResponse, result, "session/delete").deleted)


async def adelete_session(conn: Connection, session_id: str, timeout: Optional[float] = None) -> bool:
    result = await arequest(conn, "session/delete", SessionDeleteParams(sessionId=session_id), timeout=timeout)
    return bool(validate(SessionDeleteResponse, result, "session/delete").deleted)


def compact_session(conn: Connection, session_id: str, timeout: Optional[float] = None) -> bool:
    result = request(conn, "session/compact", SessionCompactParams(sessionId=session_id), timeout=timeout)
    return validate(SessionCompactResponse, result, "session/compact").compacted


async def acompact_session(conn: Connection, session_id: str, timeout: Optional[float] = None) -> bool:
    result = await arequest(conn, "session/compact", SessionCompactParams(sessionId=session_id), timeout=timeout)
    return validate(SessionCompactResponse, result, "session/compact").compacted


def _check_after(after: Optional[int], page: SessionReadResponse) -> Optional[int]:
    """The next page's ``afterSeq``; a bridge whose cursor does not move on would loop forever."""
    if page.next_seq is None:
        return None
    if after is not None and page.next_seq <= after:
        from ..errors import ProtocolError

        raise ProtocolError(f"session/read: nextSeq {page.next_seq} does not move past afterSeq {after}")
    return page.next_seq


def history(conn: Connection, session_id: str, page_size: int = READ_LIMIT_DEFAULT,
            after_seq: Optional[int] = None) -> Iterator[TurnEvent]:
    """Every logged event of a session, typed, fetched a page at a time as iteration goes."""
    after = after_seq
    while True:
        page = read_page(conn, session_id, after, page_size)
        for event in page.events:
            yield history_event(session_id, event)
        nxt = _check_after(after, page)
        if nxt is None:
            return
        after = nxt


async def ahistory(conn: Connection, session_id: str, page_size: int = READ_LIMIT_DEFAULT,
                   after_seq: Optional[int] = None) -> AsyncIterator[TurnEvent]:
    after = after_seq
    while True:
        page = await aread_page(conn, session_id, after, page_size)
        for event in page.events:
            yield history_event(session_id, event)
        nxt = _check_after(after, page)
        if nxt is None:
            return
        after = nxt


def log_path(log_folder: Optional[str], session_id: str) -> Optional[Path]:
    """The log of ``session_id`` in the folder ``session/list`` reported (None: the bridge keeps
    no log, ``--no-session-log``)."""
    return None if log_folder is None else Path(log_folder) / f"{session_id}.jsonl"

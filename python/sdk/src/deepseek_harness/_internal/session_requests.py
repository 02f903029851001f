"""The sessions API requests, shared by the blocking and the asyncio fronts: their params, the
validation of their results, history paging, and where a session's log lives."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import AsyncIterator, Iterator, List, Mapping, Optional, Sequence, Union

from ..events import TurnEvent
from ..sessions import (
    READ_LIMIT_DEFAULT,
    SessionDeleteResponse,
    SessionForkResponse,
    SessionInfo,
    SessionListResponse,
    SessionReadResponse,
    history_event,
)
from ..models import SessionCompactResponse
from .connection import Connection, arequest, request, validate
from .request_params import (
    SessionCompactParams, SessionDeleteParams, SessionForkParams, SessionListParams, SessionReadParams,
)

__all__ = [
    "list_sessions", "alist_sessions", "read_page", "aread_page", "fork_session", "afork_session",
    "delete_session", "adelete_session", "compact_session", "acompact_session", "history", "ahistory", "session_log_path",
    "workspace_folder",
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


def list_sessions(conn: Connection, timeout: Optional[float] = None) -> List[SessionInfo]:
    result = request(conn, "session/list", _NO_PARAMS, timeout=timeout)
    return list(validate(SessionListResponse, result, "session/list").sessions)


async def alist_sessions(conn: Connection, timeout: Optional[float] = None) -> List[SessionInfo]:
    result = await arequest(conn, "session/list", _NO_PARAMS, timeout=timeout)
    return list(validate(SessionListResponse, result, "session/list").sessions)


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


def workspace_folder(workspace: str) -> str:
    """The bridge's folder name of a workspace (src/agent/store/log-format.ts ``workspaceFolderName``):
    the basename with every character outside ``[A-Za-z0-9._-]`` replaced by ``_`` — one per
    UTF-16 unit, as JavaScript counts — cut to 48, then 12 hex digits of the path's sha256."""
    base = os.path.basename(workspace)
    safe = "".join(c if re.fullmatch(r"[A-Za-z0-9._-]", c) else "_" * (2 if ord(c) > 0xFFFF else 1) for c in base)
    name = safe[:48] or "root"
    digest = hashlib.sha256(workspace.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{name}-{digest}"


def _resolve(path: str, cwd: str) -> str:
    """Node's ``path.resolve`` for POSIX paths: absolute against ``cwd``, normalized, one leading slash."""
    full = os.path.normpath(os.path.join(cwd, path))
    return "/" + full.lstrip("/") if full.startswith("//") else full


def session_log_path(session_id: str, workspace: str, session_root: Optional[Union[str, "os.PathLike[str]"]],
                     env: Mapping[str, str], bridge_cwd: Optional[Union[str, "os.PathLike[str]"]],
                     extra_args: Sequence[str]) -> Optional[Path]:
    """Where the bridge started with these settings keeps the log of ``session_id`` (None with
    ``--no-session-log``): the same resolution as the bridge's (``--session-root``, else
    ``HARNESS_SESSION_ROOT``, else ``$XDG_STATE_HOME/harness-bridge`` when absolute, else
    ``~/.local/state/harness-bridge``; relative roots against the bridge's working directory)."""
    if "--no-session-log" in extra_args:
        return None
    cwd = os.fspath(bridge_cwd) if bridge_cwd is not None else os.getcwd()
    root: Optional[str] = None
    args = list(extra_args)
    for i, arg in enumerate(args):  # the bridge's own parser: the last --session-root wins
        if arg == "--session-root" and i + 1 < len(args):
            root = args[i + 1]
        elif arg.startswith("--session-root="):
            root = arg.split("=", 1)[1]
    if root is None and session_root is not None:
        root = os.fspath(session_root)
    if root is None:
        root = env.get("HARNESS_SESSION_ROOT") or None  # empty is unset, as for the bridge
    if root is None:
        state = env.get("XDG_STATE_HOME", "")
        if not os.path.isabs(state):
            state = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
        root = os.path.join(state, "harness-bridge")
    ws = _resolve(workspace, cwd)
    return Path(_resolve(root, cwd)) / workspace_folder(ws) / f"{session_id}.jsonl"

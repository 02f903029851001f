"""What a batch is made of: :class:`BatchTask` in, :class:`BatchResult` out.

Both are plain dataclasses so that they cross process and machine boundaries as they are
(pickled by Ray, one JSON line each in the batch command's files): a result carries the plain
fields of the :class:`~deepseek_harness.TurnResult` — events and usage as dicts, not pydantic
models — plus the task's identity and the worker it ran on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from ..options import HarnessOptions
from ..results import TurnResult

__all__ = ["BatchTask", "BatchResult", "Workspace", "result_of_turn", "result_of_error", "worker_name",
           "options_from_dict"]

#: A path on the worker, or a callable run on the worker that prepares a workspace (a git
#: clone into a temporary folder, say) and returns its path. The folder is the callable's:
#: the batch never deletes it.
Workspace = Union[str, "os.PathLike[str]", Callable[[], Union[str, "os.PathLike[str]"]]]


@dataclass(frozen=True)
class BatchTask:
    """One task of a batch: a prompt to run as one turn in a workspace.

    Attributes:
        id: the task's identity, unique within the batch (results carry it; the batch
            command resumes by it).
        prompt: the turn's input.
        workspace: a path on the worker, or a callable returning one (see :data:`Workspace`).
        options: the harness options of this task (its ``cwd`` is replaced by the
            workspace); default: the batch's options.
        session_id: the session to run the turn in (resumed when its log exists under the
            session root); default: a fresh session per attempt.
    """

    id: str
    prompt: str
    workspace: Workspace
    options: Optional[HarnessOptions] = None
    session_id: Optional[str] = None


@dataclass(frozen=True)
class BatchResult:
    """The outcome of one task: exactly one per task.

    Attributes:
        task_id: the :attr:`BatchTask.id`.
        status: ``"ok"``, ``"error"`` or ``"aborted"``; ``"error"`` too when the turn never
            ran (then :attr:`error` says why).
        reason: the turn's ``TurnEndReason`` as a dict (``{"kind": ...}``); None when the turn
            never ran.
        final_response: the text of the turn's last assistant message.
        events: the turn's durable events as dicts (as in the session log).
        usage: the turn's token usage as a dict, or None.
        session_id: the session the turn ran in (None when it never started).
        worker: where it ran (``host:pid``, prefixed by the Ray worker's name on Ray).
        error: ``{"type", "message"}`` of the exception that stopped the task before or instead
            of its turn (a bad workspace, a bridge that would not start, a worker that died more
            often than the retry limit); None when the turn ran to a status.
        attempts: how many workers ran the task: 1, or more after its worker was lost (died or
            stopped answering) while running it; the earlier attempts may have run partly.
        started_at / finished_at: wall-clock seconds (``time.time()``) around the turn on the
            worker (the turn only: not the workspace's preparation).
    """

    task_id: str
    status: str
    reason: Optional[Dict[str, Any]]
    final_response: str
    events: List[Dict[str, Any]] = field(default_factory=list)
    usage: Optional[Dict[str, Any]] = None
    session_id: Optional[str] = None
    worker: str = ""
    error: Optional[Dict[str, str]] = None
    attempts: int = 1
    started_at: float = 0.0
    finished_at: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> str:
        """One line of JSON (no newline)."""
        return json.dumps(dataclasses.asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BatchResult":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def with_attempts(self, attempts: int) -> "BatchResult":
        return dataclasses.replace(self, attempts=attempts)


def worker_name(prefix: str = "local") -> str:
    return f"{prefix}@{socket.gethostname()}:{os.getpid()}"


def result_of_turn(task: BatchTask, turn: TurnResult, worker: str, attempts: int, started_at: float,
                   finished_at: float) -> BatchResult:
    return BatchResult(
        task_id=task.id,
        status=turn.status,
        reason=turn.reason.model_dump(exclude_none=True),
        final_response=turn.final_response,
        events=[e.model_dump() for e in turn.events],
        usage=turn.usage.model_dump(exclude_none=True) if turn.usage is not None else None,
        session_id=turn.session_id,
        worker=worker,
        attempts=attempts,
        started_at=started_at,
        finished_at=finished_at,
    )


def result_of_error(task_id: str, exc: BaseException, worker: str, session_id: Optional[str] = None,
                    attempts: int = 1) -> BatchResult:
    now = time.time()
    return BatchResult(
        task_id=task_id, status="error", reason=None, final_response="", session_id=session_id,
        worker=worker, error={"type": type(exc).__name__, "message": str(exc) or repr(exc)},
        attempts=attempts, started_at=now, finished_at=now,
    )


_OPTION_FIELDS = {f.name for f in dataclasses.fields(HarnessOptions)}


def options_from_dict(data: Mapping[str, Any], base: Optional[HarnessOptions] = None) -> HarnessOptions:
    """``base`` (default: all defaults) with the fields in ``data`` replaced; an unknown name
    raises ``ValueError`` naming it (a misspelt option must not be silently ignored)."""
    unknown = sorted(set(data) - _OPTION_FIELDS)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(_OPTION_FIELDS))}")
    return dataclasses.replace(base or HarnessOptions(), **dict(data))

"""The batch command's files: tasks in (JSON lines), results out (JSON lines, appended).

A task line: ``{"id": "t1", "prompt": "...", "workspace": "/path", "session_id": "...",
"options": {"model": "...", ...}}``; only ``prompt`` and ``workspace`` are required, ``id``
defaults to the line number, ``options`` are :class:`~deepseek_harness.HarnessOptions` fields
that override the command's. A result line is :meth:`BatchResult.to_json`.

The results file is the batch's progress record: each result is appended and ``fsync``-ed as
it arrives, so after an interruption — Ctrl-C, a kill, a lost machine — the next run reads the
ids already answered and skips those tasks. A torn last line (the process died mid-write) is
cut off before appending, as the bridge does with its own logs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional, Set, Union

from ..options import HarnessOptions
from .tasks import BatchResult, BatchTask, options_from_dict

__all__ = ["TaskFileError", "read_tasks", "finished_ids", "finished_results", "ResultWriter"]

_TASK_KEYS = {"id", "prompt", "workspace", "session_id", "options"}


class TaskFileError(ValueError):
    """A tasks file that cannot be run as it is; the message names the line."""


def read_tasks(path: Union[str, "os.PathLike[str]"], options: Optional[HarnessOptions] = None) -> List[BatchTask]:
    """Every task of a JSON-lines file (blank lines skipped), checked before anything runs."""
    tasks: List[BatchTask] = []
    seen: Dict[str, int] = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFileError(f"{where}: not JSON: {exc.msg}") from None
            task = _task_of(data, str(number), options, where)
            if task.id in seen:
                raise TaskFileError(f"{where}: task id {task.id!r} is already the id of line {seen[task.id]}")
            seen[task.id] = number
            tasks.append(task)
    return tasks


def _task_of(data: Any, default_id: str, options: Optional[HarnessOptions], where: str) -> BatchTask:
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: a task is a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - _TASK_KEYS)
    if unknown:
        raise TaskFileError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_TASK_KEYS))}")
    for key in ("prompt", "workspace"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise TaskFileError(f"{where}: {key!r} must be a non-empty string")
    task_id = data.get("id", default_id)
    if not isinstance(task_id, (str, int)) or isinstance(task_id, bool) or str(task_id) == "":
        raise TaskFileError(f"{where}: 'id' must be a non-empty string or an integer")
    session_id = data.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        raise TaskFileError(f"{where}: 'session_id' must be a string")
    task_options = options
    if "options" in data:
        if not isinstance(data["options"], dict):
            raise TaskFileError(f"{where}: 'options' must be an object of HarnessOptions fields")
        try:
            task_options = options_from_dict(data["options"], options)
        except (ValueError, TypeError) as exc:
            raise TaskFileError(f"{where}: {exc}") from None
    return BatchTask(id=str(task_id), prompt=data["prompt"], workspace=data["workspace"],
                     options=task_options, session_id=session_id)


def finished_ids(path: Union[str, "os.PathLike[str]"]) -> Set[str]:
    """The task ids a results file already answers (none when it does not exist)."""
    return set(finished_results(path))


def finished_results(path: Union[str, "os.PathLike[str]"]) -> Dict[str, bool]:
    """Each task id a results file answers, with whether its result is ``ok`` (none when the
    file does not exist). A line that does not parse is skipped — only a torn last line can be
    one, and its task reruns. An id answered twice (lines appended by hand) counts as its last
    line says."""
    results: Dict[str, bool] = {}
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        return results
    with f:
        for line in f:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict) and isinstance(data.get("task_id"), str):
                results[data["task_id"]] = data.get("status") == "ok"
    return results


class ResultWriter:
    """Appends results to a JSON-lines file, one ``write`` + ``fsync`` per result."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self.path = Path(path)
        self._file: BinaryIO = open(self.path, "ab+")
        self._cut_torn_tail()

    def _cut_torn_tail(self) -> None:
        f = self._file
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        # Read backwards to the last newline: everything after it is a torn line.
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            block = f.read(step)
            i = block.rfind(b"\n")
            if i >= 0:
                pos = pos - step + i + 1
                break
            pos -= step
        if pos != size:
            f.truncate(pos)
            f.flush()
            os.fsync(f.fileno())

    def write(self, result: BatchResult) -> None:
        self._file.write(result.to_json().encode("utf-8") + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

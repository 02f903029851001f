"""Shared by the batch tests: scripted tasks and checks against the session logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from deepseek_harness import HarnessOptions
from deepseek_harness.batch import BatchResult

from conftest import real_bridge_or_skip


def answer(text_of: str) -> str:
    return f"done: {text_of}"


def write_script(path: Path, text: str = "finished the task", delay_ms: int = 0, chunk: int = 16,
                 error: Optional[Dict[str, Any]] = None) -> Path:
    step: Dict[str, Any] = {"text": text, "chunkSize": chunk}
    if delay_ms:
        step["delayMs"] = delay_ms
    if error is not None:
        step["error"] = error
    path.write_text(json.dumps({"turns": [{"steps": [step]}]}))
    return path


def scripted_options(tmp: Path, script: Path) -> HarnessOptions:
    return HarnessOptions(provider="scripted", model=str(script), session_root=str(tmp / "sessions"),
                          bridge_bin=str(real_bridge_or_skip()), shutdown_timeout_seconds=5.0,
                          request_timeout_seconds=120)


def workspaces(tmp: Path, n: int) -> List[Path]:
    out = []
    for i in range(n):
        ws = tmp / f"repo-{i}"
        ws.mkdir(exist_ok=True)
        (ws / "README.md").write_text(f"repository {i}\n")
        out.append(ws)
    return out


def logged_events(session_root: Path, session_id: str) -> List[Dict[str, Any]]:
    (path,) = list(session_root.rglob(f"{session_id}.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def assert_log_equals_result(session_root: Path, result: BatchResult) -> None:
    assert result.session_id is not None, result
    assert logged_events(session_root, result.session_id) == result.events, result.task_id


class Prepared:
    """A workspace callable: makes the folder (as a clone into a temporary folder would) and
    returns its path."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __call__(self) -> str:
        import os

        os.makedirs(self.path, exist_ok=True)
        return self.path


class Failing:
    """A workspace callable that raises, as a failed clone would."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __call__(self) -> str:
        raise RuntimeError(self.message)


class ExitProcess:
    """A workspace callable that ends the worker process (a task that crashes its worker)."""

    def __call__(self) -> str:
        import os

        os._exit(1)

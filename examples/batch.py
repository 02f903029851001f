"""A batch: one prompt per task, each task in a workspace of its own, run by an asyncio pool of
bridges on this machine; results in task order, with a progress line per finished task. Each
workspace is prepared by a callable (a scratch folder with a README here; a `git clone` in
real use). With DEEPSEEK_API_KEY set it talks to DeepSeek, otherwise to the offline demo model.
The same tasks run on a Ray cluster with `deepseek_harness.ray.run_batch` (python/sdk/README.md,
"Batches").

    HARNESS_BRIDGE_BIN=$PWD/bin/harness-bridge python examples/batch.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional

from deepseek_harness import HarnessOptions
from deepseek_harness.batch import BatchResult, BatchTask, run_local


def scratch_repo(name: str, root: Path) -> Callable[[], str]:
    """A workspace factory: called when the task starts (on the worker, with Ray)."""

    def prepare() -> str:
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "README.md").write_text(f"# {name}\nThe {name} service.\n", encoding="utf-8")
        return str(folder)

    return prepare


def show(done: int, total: Optional[int], result: BatchResult) -> None:
    """Progress: `total` is None while the tasks are still being read (an iterator of tasks)."""
    print(f"[{done}/{total or '?'}] {result.task_id}: {result.status}")


def main() -> int:
    online = bool(os.environ.get("DEEPSEEK_API_KEY"))
    options = HarnessOptions(provider="deepseek") if online else HarnessOptions(provider="scripted", model="demo")
    with tempfile.TemporaryDirectory() as scratch:
        tasks = [BatchTask(id=name, prompt="What is in README.md?", workspace=scratch_repo(name, Path(scratch)))
                 for name in ("api", "web", "cli", "docs")]
        results = run_local(tasks, options, concurrency=2, progress=show)
    for r in results:
        # A failed task says why: the turn's reason, or the error that kept it from running.
        print(f"{r.task_id} ({r.worker}): " + (repr(r.final_response[:70]) if r.status == "ok" else f"{r.status} {r.reason or r.error}"))
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

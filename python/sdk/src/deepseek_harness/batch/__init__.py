"""Batches of agent tasks: many prompts over many workspaces, one result per task.

- :class:`BatchTask` / :class:`BatchResult`: the plain, picklable task and result.
- :func:`run_local` / :func:`iter_local`: on this machine, an asyncio pool of sessions over a
  few bridges (:class:`HarnessPool`).
- :mod:`deepseek_harness.ray` (extra ``deepseek-harness[ray]``): the same on a Ray cluster.
- ``python -m deepseek_harness.batch tasks.jsonl --out results.jsonl``: either, from files,
  resumable.
"""

from .local import iter_local, run_local
from .pool import HarnessPool
from .progress import ProgressBar, ProgressCallback
from .tasks import BatchResult, BatchTask, Workspace

__all__ = ["BatchTask", "BatchResult", "Workspace", "HarnessPool", "iter_local", "run_local",
           "ProgressBar", "ProgressCallback"]

"""Agent batches on a Ray cluster (extra ``deepseek-harness[ray]``; importing this module
imports Ray, :mod:`deepseek_harness` itself never does).

:func:`run_batch` returns the results in task order, :func:`iter_batch` yields them as they
complete; :class:`RayBatchRunner` keeps the workers between batches. Tasks and results are
those of :mod:`deepseek_harness.batch`.
"""

try:
    import ray as _ray  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("deepseek_harness.ray needs Ray: pip install 'deepseek-harness[ray]'") from exc

from ..batch.tasks import BatchResult, BatchTask
from .runner import NoWorkersError, RayBatchRunner, WorkerDiedError, iter_batch, run_batch
from .worker import HarnessWorker, TurnLimiter

__all__ = ["run_batch", "iter_batch", "RayBatchRunner", "WorkerDiedError", "NoWorkersError", "HarnessWorker", "TurnLimiter",
           "BatchTask", "BatchResult"]

"""``RayBatchRunner``: a batch over Ray actors, with ``run_batch`` / ``iter_batch`` around it.

Scheduling is Ray's: the runner only keeps each :class:`HarnessWorker` fed with up to
``worker_concurrency`` tasks and waits on their results (``ray.wait``). Faults:

- A worker that dies (``ray.kill``, its machine lost, out of memory) fails every call in flight
  on it with ``RayActorError``; each of those tasks goes back to the queue and runs again on the
  other workers or on the worker started in the dead one's place, with a fresh session unless
  the task names one. After ``max_attempts`` deaths a task gets a failure result, so a task that
  kills its worker each time is answered, not retried forever. The dead worker's turn permits
  are given back to the limiter.
- A task that fails on its own (a model error, a bad workspace, a callable that raises or does
  not pickle) is answered with that failure at once: the worker never raises for it.

Either way the caller receives exactly one result per task.
"""

from __future__ import annotations

import collections
import uuid
from typing import Any, Deque, Dict, Generator, Iterable, List, Optional, Tuple

import ray
from ray.exceptions import RayActorError

from ..batch.local import check_unique_ids
from ..batch.progress import Progress, progress_reporter
from ..batch.tasks import BatchResult, BatchTask, result_of_error, worker_name
from ..options import HarnessOptions
from .worker import LIMITER_NAMESPACE, RemoteHarnessWorker, RemoteTurnLimiter

__all__ = ["RayBatchRunner", "WorkerDiedError", "run_batch", "iter_batch"]


class WorkerDiedError(RuntimeError):
    """The error of a task whose worker died ``max_attempts`` times while running it."""


class _Slot:
    """One worker position: the actor now in it, replaced when it dies."""

    def __init__(self, runner_tag: str, index: int) -> None:
        self.runner_tag = runner_tag
        self.index = index
        self.generation = -1
        self.actor: Any = None
        self.in_flight = 0
        # Running a retried task alone (see RayBatchRunner.iter), or draining to run one.
        self.isolated = False
        self.reserved = False

    @property
    def label(self) -> str:
        return f"w{self.index}.{self.generation}"

    @property
    def holder(self) -> str:
        """The limiter's name for this actor: unique even when runners share a limiter."""
        return f"{self.runner_tag}/{self.label}"


class RayBatchRunner:
    """Runs batches on ``workers`` Ray actors (connects with ``ray.init()`` if Ray is not
    initialized yet: set ``RAY_ADDRESS`` or call ``ray.init(address=...)`` first for a cluster).

    Args:
        options: the options of tasks that bring none.
        workers: how many :class:`HarnessWorker` actors.
        max_turns_in_flight: the cluster-wide cap on turns in flight, shared by every worker.
        worker_concurrency: tasks given to one worker at once (default: the cap; at least 1).
        max_attempts: runs of a task whose worker died before it is answered with
            :class:`WorkerDiedError`.
        worker_options: ``.options()`` of the worker actors (``num_cpus``, ``resources``,
            ``runtime_env``, ...); default ``num_cpus=0`` spread over the nodes: a worker mostly
            waits on the model, and its bridges' CPU is not Ray's to count.
        limiter_name: share the cap with every other runner using this name, in any job (a
            detached named actor in namespace ``deepseek_harness``, with the cap of the runner
            that made it; it lives until the cluster stops or ``ray.kill``); default: a cap of
            this runner's own, ended with it.
        max_idle_bridges: bridges without a running task each worker keeps open.
        limiter_check_seconds: how often the limiter checks that the workers holding permits
            are alive (a worker that died with its runner gives its permits back this way).
    """

    def __init__(self, options: Optional[HarnessOptions] = None, *, workers: int = 4,
                 max_turns_in_flight: int = 8, worker_concurrency: Optional[int] = None,
                 max_attempts: int = 3, worker_options: Optional[Dict[str, Any]] = None,
                 limiter_name: Optional[str] = None, max_idle_bridges: int = 8,
                 limiter_check_seconds: float = 5.0) -> None:
        if workers < 1 or max_turns_in_flight < 1 or max_attempts < 1:
            raise ValueError("workers, max_turns_in_flight and max_attempts must be at least 1")
        self.options = options
        self.max_turns_in_flight = max_turns_in_flight
        self.worker_concurrency = max(1, worker_concurrency or max_turns_in_flight)
        self.max_attempts = max_attempts
        self.worker_options = dict(worker_options) if worker_options is not None else {
            "num_cpus": 0, "scheduling_strategy": "SPREAD"}
        self.limiter_name = limiter_name
        self.limiter_check_seconds = limiter_check_seconds
        self.max_idle_bridges = max_idle_bridges
        tag = uuid.uuid4().hex[:12]
        self._slots = [_Slot(tag, i) for i in range(workers)]
        self.limiter: Any = None
        self.workers_started = 0
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "RayBatchRunner":
        """Starts the limiter and the workers (idempotent)."""
        if self._closed:
            raise RuntimeError("this RayBatchRunner is closed")
        if not ray.is_initialized():
            ray.init()
        if self.limiter is None:
            name = self.limiter_name or f"turns-{self._slots[0].runner_tag}"
            # A shared one is detached: it must outlive the runner that happened to make it.
            self.limiter = RemoteTurnLimiter.options(
                name=name, namespace=LIMITER_NAMESPACE, get_if_exists=True, num_cpus=0,
                max_concurrency=100_000, lifetime="detached" if self.limiter_name else None,
            ).remote(self.max_turns_in_flight, self.limiter_check_seconds)
        for slot in self._slots:
            if slot.actor is None:
                self._spawn(slot)
        return self

    def _spawn(self, slot: _Slot) -> None:
        slot.generation += 1
        slot.in_flight = 0
        slot.isolated = slot.reserved = False
        slot.actor = RemoteHarnessWorker.options(
            max_concurrency=self.worker_concurrency, **self.worker_options
        ).remote(slot.label, slot.holder, self.options, self.limiter, self.max_idle_bridges)
        self.workers_started += 1

    @property
    def workers(self) -> List[Any]:
        """The worker actors now in service (a dead one's replacement included)."""
        return [s.actor for s in self._slots if s.actor is not None]

    def stats(self) -> Dict[str, int]:
        """The limiter's counters: ``limit``, ``in_flight``, ``max_in_flight``, ``granted``."""
        return dict(ray.get(self.limiter.stats.remote()))

    def close(self, timeout: float = 10.0) -> None:
        """Closes the workers' bridges (bounded by ``timeout``), then ends the actors."""
        if self._closed:
            return
        self._closed = True
        actors = self.workers
        if actors:
            ray.wait([a.close.remote() for a in actors], num_returns=len(actors), timeout=timeout)
        for a in actors:
            ray.kill(a, no_restart=True)
        if self.limiter is not None and self.limiter_name is None:
            ray.kill(self.limiter, no_restart=True)
        for s in self._slots:
            s.actor = None

    def __enter__(self) -> "RayBatchRunner":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- batches ---------------------------------------------------------------------------

    def iter(self, tasks: Iterable[BatchTask], progress: Progress = None) -> Generator[BatchResult, None, None]:
        """Yields one result per task as each completes. ``tasks`` is read lazily, as workers
        have room. Leaving the loop early leaves the workers running what they were given;
        :meth:`close` ends them."""
        self.start()
        total = len(tasks) if isinstance(tasks, (list, tuple)) else None
        reporter = progress_reporter(progress, total)
        source = check_unique_ids(tasks)
        retries: Deque[Tuple[BatchTask, int]] = collections.deque()
        in_flight: Dict[Any, Tuple[BatchTask, int, _Slot, int]] = {}
        exhausted = False
        failed_at_submit: List[BatchResult] = []

        def submit(slot: _Slot, task: BatchTask, attempts: int) -> bool:
            try:
                ref = slot.actor.run.remote(task, attempts)
            except Exception as exc:  # noqa: BLE001 - e.g. a workspace callable that does not pickle
                failed_at_submit.append(result_of_error(task.id, exc, worker_name("driver"), None, attempts))
                return False
            in_flight[ref] = (task, attempts, slot, slot.generation)
            slot.in_flight += 1
            return True

        try:
            while True:
                failed_at_submit.clear()
                # A task whose worker died runs again *alone* on a worker (reserved, drained of
                # its other tasks first): then a later death is its own, so an innocent task that
                # shared a worker with one that crashes it is not failed with it. One reserved
                # worker per waiting retry, no more (a reserved worker takes no new tasks).
                reserved = [s for s in self._slots if s.reserved]
                for extra in sorted(reserved, key=lambda s: -s.in_flight)[: max(0, len(reserved) - len(retries))]:
                    extra.reserved = False
                free = [s for s in self._slots if not s.isolated and not s.reserved]
                while sum(s.reserved for s in self._slots) < len(retries) and free:
                    pick = min(free, key=lambda s: s.in_flight)
                    pick.reserved = True
                    free.remove(pick)
                for slot in self._slots:
                    if slot.reserved and slot.in_flight == 0 and retries:
                        task, attempts = retries.popleft()
                        slot.reserved = False
                        slot.isolated = submit(slot, task, attempts)
                    if slot.isolated or slot.reserved:
                        continue
                    while slot.in_flight < self.worker_concurrency and not exhausted:
                        nxt = next(source, None)
                        if nxt is None:
                            exhausted = True
                            break
                        submit(slot, nxt, 1)
                for result in failed_at_submit:
                    yield self._report(reporter, result)
                if not in_flight:
                    if exhausted and not retries:
                        return
                    continue
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                if len(in_flight) > 1:
                    more, _ = ray.wait([r for r in in_flight if r not in ready], num_returns=len(in_flight) - 1, timeout=0)
                    ready = ready + more
                for ref in ready:
                    task, attempts, slot, generation = in_flight.pop(ref)
                    if slot.generation == generation:
                        slot.in_flight -= 1
                        slot.isolated = False
                    outcome = self._outcome(ref, task, attempts, slot, generation)
                    if outcome is None:
                        retries.append((task, attempts + 1))
                    else:
                        yield self._report(reporter, outcome)
        finally:
            if reporter is not None:
                reporter.close()

    def _outcome(self, ref: Any, task: BatchTask, attempts: int, slot: _Slot, generation: int) -> Optional[BatchResult]:
        """The task's result, or None when its worker died and it runs again."""
        try:
            result: BatchResult = ray.get(ref)
            return result
        except RayActorError as exc:
            if slot.generation == generation:
                self._replace(slot)
            if attempts >= self.max_attempts:
                died = WorkerDiedError(f"the worker running task {task.id!r} died {attempts} times; last: {exc}")
                return result_of_error(task.id, died, f"ray:w{slot.index}.{generation}", task.session_id, attempts)
            return None
        except Exception as exc:  # noqa: BLE001 - the task's own (e.g. its callable would not unpickle)
            return result_of_error(task.id, exc, f"ray:w{slot.index}.{generation}", task.session_id, attempts)

    def _replace(self, slot: _Slot) -> None:
        dead, holder = slot.actor, slot.holder
        ray.kill(dead, no_restart=True)
        self.limiter.release_all.remote(holder)
        self._spawn(slot)

    @staticmethod
    def _report(reporter: Any, result: BatchResult) -> BatchResult:
        if reporter is not None:
            reporter(result)
        return result

    def run(self, tasks: Iterable[BatchTask], progress: Progress = None) -> List[BatchResult]:
        """:meth:`iter` to the end: the results in task order."""
        ordered = list(check_unique_ids(tasks))
        by_id = {r.task_id: r for r in self.iter(ordered, progress)}
        return [by_id[t.id] for t in ordered]


def iter_batch(tasks: Iterable[BatchTask], options: Optional[HarnessOptions] = None, *,
               progress: Progress = None, **runner_args: Any) -> Generator[BatchResult, None, None]:
    """Runs ``tasks`` on a new :class:`RayBatchRunner` (``runner_args`` are its arguments) and
    yields each result as it completes; the workers end with the iteration."""
    with RayBatchRunner(options, **runner_args) as runner:
        yield from runner.iter(tasks, progress)


def run_batch(tasks: Iterable[BatchTask], options: Optional[HarnessOptions] = None, *,
              progress: Progress = None, **runner_args: Any) -> List[BatchResult]:
    """Runs ``tasks`` on a new :class:`RayBatchRunner`; the results in task order."""
    with RayBatchRunner(options, **runner_args) as runner:
        return runner.run(tasks, progress)

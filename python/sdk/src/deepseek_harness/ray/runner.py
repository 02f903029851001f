"""``RayBatchRunner``: a batch over Ray actors, with ``run_batch`` / ``iter_batch`` around it.

Scheduling is Ray's: the runner only keeps each serving :class:`HarnessWorker` fed with up to
``worker_concurrency`` tasks and waits on their results (``ray.wait``). Faults:

- A worker that is *lost* — dead (``ray.kill``, out of memory, a crash), or not answering
  (its machine lost or cut off: Ray's ``ActorUnavailableError``, or a ping unanswered for
  ``lost_after_seconds``; see :mod:`.slots`) — is abandoned at its first sign: its actor is
  killed, its turn permits are given back to the limiter, and every task it had in flight
  goes back to the queue at once, to run again on the other workers or on the worker started
  in its place, with a fresh session unless the task names one. The abandoned calls' refs are
  dropped: a result that arrives late from an abandoned attempt (the machine came back) is
  never read, so a task is answered once. After ``max_attempts`` losses a task gets a
  :class:`WorkerDiedError` result, so a task that kills its worker each time is answered, not
  retried forever.
- A worker gets tasks only once placed (its first ping answered): a replacement Ray cannot
  place (the capacity it needs is gone) holds no task, the others finish the batch, and after
  ``placement_timeout`` it is given up. When every worker is given up, the tasks left are
  answered with :class:`NoWorkersError` instead of waiting for ever.
- A task that fails on its own (a model error, a bad workspace, a callable that raises or does
  not pickle) is answered with that failure at once: the worker never raises for it.

Either way the caller receives exactly one result per task. "Exactly one result" is not
"executed once": an abandoned attempt may have run partly or wholly (see the SDK's README).
"""

from __future__ import annotations

import collections
import uuid
from typing import Any, Deque, Dict, Generator, Iterable, List, Optional, Tuple

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..batch.local import check_unique_ids
from ..batch.progress import Progress, progress_reporter
from ..batch.tasks import BatchResult, BatchTask, result_of_error, worker_name
from ..options import HarnessOptions
from .slots import LOST, Slot, monotonic
from .worker import LIMITER_NAMESPACE, RemoteHarnessWorker, RemoteTurnLimiter

__all__ = ["RayBatchRunner", "WorkerDiedError", "NoWorkersError", "run_batch", "iter_batch"]


class WorkerDiedError(RuntimeError):
    """The error of a task whose worker was lost ``max_attempts`` times while running it."""


class NoWorkersError(RuntimeError):
    """The error of the tasks left when no worker could be placed within ``placement_timeout``."""


class RayBatchRunner:
    """Runs batches on ``workers`` Ray actors (connects with ``ray.init()`` if Ray is not
    initialized yet: set ``RAY_ADDRESS`` or call ``ray.init(address=...)`` first for a cluster).

    Args:
        options: the options of tasks that bring none.
        workers: how many :class:`HarnessWorker` actors.
        max_turns_in_flight: the cluster-wide cap on turns in flight, shared by every worker.
        worker_concurrency: tasks given to one worker at once (default: the cap; at least 1).
        max_attempts: runs of a task whose worker was lost before it is answered with
            :class:`WorkerDiedError`.
        worker_options: ``.options()`` of the worker actors (``num_cpus``, ``resources``,
            ``runtime_env``, ...); default ``num_cpus=0`` spread over the nodes: a worker mostly
            waits on the model, and its bridges' CPU is not Ray's to count.
        limiter_name: share the cap with every other runner using this name, in any job (a
            detached named actor in namespace ``deepseek_harness``, with the cap of the runner
            that made it; it lives until the cluster stops or ``ray.kill``); default: a cap of
            this runner's own, ended with it. A limiter this runner makes is placed on the
            driver's node, whose loss ends the batch anyway, never on a worker's.
        max_idle_bridges: bridges without a running task each worker keeps open.
        limiter_check_seconds: how often the limiter checks that the workers holding permits
            are alive (a worker that died with its runner gives its permits back this way).
        ping_seconds / lost_after_seconds: a worker with tasks in flight is pinged every
            ``ping_seconds``; one that has not answered for ``lost_after_seconds`` is lost
            (its tasks run again elsewhere) without waiting for Ray's health checks.
        placement_timeout: seconds a worker (a replacement, or one of the first) may wait to
            be placed before it is given up.
    """

    def __init__(self, options: Optional[HarnessOptions] = None, *, workers: int = 4,
                 max_turns_in_flight: int = 8, worker_concurrency: Optional[int] = None,
                 max_attempts: int = 3, worker_options: Optional[Dict[str, Any]] = None,
                 limiter_name: Optional[str] = None, max_idle_bridges: int = 8,
                 limiter_check_seconds: float = 5.0, ping_seconds: float = 2.0,
                 lost_after_seconds: float = 10.0, placement_timeout: float = 300.0) -> None:
        if workers < 1 or max_turns_in_flight < 1 or max_attempts < 1:
            raise ValueError("workers, max_turns_in_flight and max_attempts must be at least 1")
        if min(ping_seconds, lost_after_seconds, placement_timeout) <= 0:
            raise ValueError("ping_seconds, lost_after_seconds and placement_timeout must be positive")
        self.options = options
        self.max_turns_in_flight = max_turns_in_flight
        self.worker_concurrency = max(1, worker_concurrency or max_turns_in_flight)
        self.max_attempts = max_attempts
        self.worker_options = dict(worker_options) if worker_options is not None else {
            "num_cpus": 0, "scheduling_strategy": "SPREAD"}
        self.limiter_name = limiter_name
        self.limiter_check_seconds = limiter_check_seconds
        self.max_idle_bridges = max_idle_bridges
        self.ping_seconds = ping_seconds
        self.lost_after_seconds = lost_after_seconds
        self.placement_timeout = placement_timeout
        tag = uuid.uuid4().hex[:12]
        self._slots = [Slot(tag, i) for i in range(workers)]
        self.limiter: Any = None
        #: Actors asked for (a lost one's replacement included), lost, and given up unplaced.
        self.workers_started = 0
        self.workers_lost = 0
        self.workers_unplaced = 0
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> "RayBatchRunner":
        """Starts the limiter and the workers (idempotent; workers are placed asynchronously)."""
        if self._closed:
            raise RuntimeError("this RayBatchRunner is closed")
        if not ray.is_initialized():
            ray.init()
        if self.limiter is None:
            name = self.limiter_name or f"turns-{self._slots[0].runner_tag}"
            here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
            # A shared one is detached: it must outlive the runner that happened to make it.
            self.limiter = RemoteTurnLimiter.options(
                name=name, namespace=LIMITER_NAMESPACE, get_if_exists=True, num_cpus=0,
                max_concurrency=100_000, lifetime="detached" if self.limiter_name else None,
                scheduling_strategy=here,
            ).remote(self.max_turns_in_flight, self.limiter_check_seconds)
        for slot in self._slots:
            if slot.actor is None and slot.state != "retired":
                self._spawn(slot)
        return self

    def _spawn(self, slot: Slot) -> None:
        label = f"w{slot.index}.{slot.generation + 1}"
        actor = RemoteHarnessWorker.options(
            max_concurrency=self.worker_concurrency, **self.worker_options
        ).remote(label, f"{slot.runner_tag}/{label}", self.options, self.limiter, self.max_idle_bridges)
        slot.started(actor, monotonic())
        self.workers_started += 1

    def _replace(self, slot: Slot) -> None:
        """Abandons the slot's actor (its tasks are the caller's to requeue) and starts
        another. Killed, so that if it comes back it runs nothing more; its permits given back,
        so that turns it will never finish do not hold the cap (its late acquires are refused)."""
        ray.kill(slot.actor, no_restart=True)
        self.limiter.release_all.remote(slot.holder)
        self._spawn(slot)

    @property
    def workers(self) -> List[Any]:
        """The worker actors now in service or starting (a lost one's replacement included)."""
        return [s.actor for s in self._slots if s.actor is not None]

    def stats(self) -> Dict[str, int]:
        """The limiter's counters: ``limit``, ``in_flight``, ``max_in_flight``, ``granted``."""
        return dict(ray.get(self.limiter.stats.remote()))

    def close(self, timeout: float = 10.0) -> None:
        """Closes the serving workers' bridges (bounded by ``timeout``), then ends the actors
        (one still waiting for placement is not waited for)."""
        if self._closed:
            return
        self._closed = True
        serving = [s.actor for s in self._slots if s.serving]
        if serving:
            ray.wait([a.close.remote() for a in serving], num_returns=len(serving), timeout=timeout)
        for a in self.workers:
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
        # Every call whose result is still wanted. A lost worker's calls leave it at once:
        # whatever they return later is never read (the invariant behind "answered once").
        in_flight: Dict[Any, Tuple[BatchTask, int, Slot]] = {}
        answers: List[BatchResult] = []
        exhausted = False

        def submit(slot: Slot, task: BatchTask, attempts: int) -> bool:
            try:
                ref = slot.actor.run.remote(task, attempts)
            except Exception as exc:  # noqa: BLE001 - e.g. a workspace callable that does not pickle
                answers.append(result_of_error(task.id, exc, worker_name("driver"), None, attempts))
                return False
            in_flight[ref] = (task, attempts, slot)
            slot.refs.add(ref)
            return True

        def requeue(task: BatchTask, attempts: int, slot: Slot, why: Any) -> None:
            if attempts >= self.max_attempts:
                died = WorkerDiedError(f"the worker running task {task.id!r} was lost {attempts} times; last: {why}")
                answers.append(result_of_error(task.id, died, f"ray:{slot.label}", task.session_id, attempts))
            else:
                retries.append((task, attempts + 1))

        def lose(slot: Slot, why: Any) -> None:
            for ref in slot.refs:
                task, attempts, _ = in_flight.pop(ref)
                requeue(task, attempts, slot, why)
            self.workers_lost += 1
            self._replace(slot)

        try:
            while True:
                now = monotonic()
                for slot in self._slots:
                    verdict = slot.check(now, self.ping_seconds, self.lost_after_seconds, self.placement_timeout)
                    if verdict == "lost":
                        lose(slot, f"no answer to a ping for {self.lost_after_seconds:g} s")
                    elif verdict == "unplaced":
                        slot.retire()
                        self.workers_unplaced += 1
                exhausted = self._assign(retries, submit, source, exhausted)
                if all(s.state == "retired" for s in self._slots):
                    # No worker will ever run what is left (none has tasks in flight: only a
                    # starting one retires): answer it rather than wait for ever.
                    gone = NoWorkersError(f"no worker could be placed within {self.placement_timeout:g} s")
                    left = list(retries) + ([] if exhausted else [(t, 1) for t in source])
                    answers.extend(result_of_error(t.id, gone, worker_name("driver"), t.session_id, n) for t, n in left)
                    retries.clear()
                    exhausted = True
                for result in answers:
                    yield self._report(reporter, result)
                answers.clear()
                if not in_flight and not retries and exhausted:
                    return
                self._wait_and_collect(in_flight, requeue, lose, answers)
        finally:
            if reporter is not None:
                reporter.close()

    def _assign(self, retries: Deque[Tuple[BatchTask, int]], submit: Any, source: Any, exhausted: bool) -> bool:
        """Gives the serving workers what they have room for; True once ``source`` ran out.

        A task whose worker was lost runs again *alone* on a worker (reserved, drained of its
        other tasks first): then a later loss is its own, so an innocent task that shared a
        worker with one that crashes it is not failed with it. One reserved worker per waiting
        retry, no more (a reserved worker takes no new tasks)."""
        serving = [s for s in self._slots if s.serving]
        reserved = [s for s in serving if s.reserved]
        for extra in sorted(reserved, key=lambda s: -len(s.refs))[: max(0, len(reserved) - len(retries))]:
            extra.reserved = False
        free = [s for s in serving if not s.isolated and not s.reserved]
        while sum(s.reserved for s in serving) < len(retries) and free:
            pick = min(free, key=lambda s: len(s.refs))
            pick.reserved = True
            free.remove(pick)
        for slot in serving:
            if slot.reserved and not slot.refs and retries:
                task, attempts = retries.popleft()
                slot.reserved = False
                slot.isolated = submit(slot, task, attempts)
            if slot.isolated or slot.reserved:
                continue
            while len(slot.refs) < self.worker_concurrency and not exhausted:
                nxt = next(source, None)
                if nxt is None:
                    exhausted = True
                    break
                submit(slot, nxt, 1)
        return exhausted

    def _wait_and_collect(self, in_flight: Dict[Any, Tuple[BatchTask, int, Slot]], requeue: Any, lose: Any,
                          answers: List[BatchResult]) -> None:
        """Waits for a result, a worker's ping or the next deadline of a slot's clock, and
        takes in what is ready: results into ``answers``, lost workers to ``lose``."""
        control: Dict[Any, Tuple[Slot, int, str]] = {}
        for slot in self._slots:
            for ref, kind in slot.control_refs().items():
                control[ref] = (slot, slot.generation, kind)
        refs = list(in_flight) + list(control)
        if not refs:
            return
        deadlines = [d for d in (s.deadline(self.lost_after_seconds, self.placement_timeout) for s in self._slots)
                     if d is not None]
        timeout = max(0.0, min(deadlines) - monotonic()) if deadlines else None
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = ready + more
        for ref in ready:
            if ref in control:
                slot, generation, kind = control[ref]
                if slot.generation == generation and slot.actor is not None:
                    self._control_answer(slot, kind, ref, lose)
                continue
            entry = in_flight.pop(ref, None)
            if entry is None:
                continue  # its worker was lost earlier in this round: abandoned, never read
            task, attempts, slot = entry
            slot.refs.discard(ref)
            slot.isolated = False
            try:
                answers.append(ray.get(ref))
            except LOST as exc:
                requeue(task, attempts, slot, exc)
                lose(slot, exc)
            except Exception as exc:  # noqa: BLE001 - the task's own (e.g. its callable would not unpickle)
                answers.append(result_of_error(task.id, exc, f"ray:{slot.label}", task.session_id, attempts))

    def _control_answer(self, slot: Slot, kind: str, ref: Any, lose: Any) -> None:
        now = monotonic()
        try:
            ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a ping fails only when the actor is gone
            if kind == "ping":
                lose(slot, exc)
            else:  # died starting (its node lost meanwhile): try again, same placement clock
                ray.kill(slot.actor, no_restart=True)
                self._spawn(slot)
            return
        if kind == "ready":
            slot.placed(now, self.ping_seconds)
        else:
            slot.answered_ping(now, self.ping_seconds)

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

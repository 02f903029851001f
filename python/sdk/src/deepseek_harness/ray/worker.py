"""The Ray actors of a batch: :class:`HarnessWorker` runs tasks, :class:`TurnLimiter` caps the
turns in flight across the whole cluster.

A worker is an async actor owning one :class:`~deepseek_harness.batch.HarnessPool`: many
sessions at once on its bridges (one bridge per workspace and options, see the pool), each
turn entered through the cluster-wide limiter. The pool is the actor's one harness whenever the
tasks share a workspace and options, and one bridge per such key otherwise, because the
protocol fixes ``cwd`` per ``initialize``.

The limiter is one named actor per batch (or one shared by name across batches, see
``limiter_name`` of :class:`~deepseek_harness.ray.RayBatchRunner`): DeepSeek limits concurrency
per account, not per machine. Every permit is held by a worker *holder* name, so the permits of
a worker that died holding them are given back (:meth:`TurnLimiter.release_all`) by the runner
when it sees the death.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Dict, Optional, Set

import ray
from ray.exceptions import RayActorError

from ..batch.pool import HarnessPool
from ..batch.tasks import BatchResult, BatchTask, worker_name
from ..options import HarnessOptions

__all__ = ["TurnLimiter", "HarnessWorker", "ClusterPermit", "LIMITER_NAMESPACE"]

#: The Ray namespace of named limiters, so that batches of different jobs can share one.
LIMITER_NAMESPACE = "deepseek_harness"


class TurnLimiter:
    """A counting semaphore as an async actor. Wrapped by ``ray.remote`` in the runner (with
    ``max_concurrency`` high enough for every waiting worker)."""

    def __init__(self, limit: int, check_seconds: float = 5.0) -> None:
        if limit < 1:
            raise ValueError(f"the cap on turns in flight must be at least 1, not {limit}")
        self.limit = limit
        self.in_flight = 0
        self.max_in_flight = 0
        self.granted = 0
        self._held: Dict[str, Set[str]] = {}
        # Permits released (by a cancelled waiter) before they were granted: never grant them.
        self._withdrawn: Set[str] = set()
        # Holders whose permits were given back because they died: their acquires still queued
        # here (sent before the death) must not be granted, or those permits would leak.
        self._gone: Set[str] = set()
        self._changed = asyncio.Condition()
        # Holder → its actor, to find holders that died holding permits when nobody said so
        # (their runner died too: a shared, detached limiter outlives both).
        self._actors: Dict[str, Any] = {}
        self._check_seconds = check_seconds
        self._watchdog: Optional["asyncio.Task[None]"] = None

    async def register(self, holder: str, actor: Any) -> None:
        self._actors[holder] = actor
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._check_seconds)
            for holder in [h for h, permits in self._held.items() if permits]:
                actor = self._actors.get(holder)
                if actor is None:
                    continue
                try:
                    await asyncio.wait_for(asyncio.wrap_future(actor.ping.remote().future()), 30)
                except RayActorError:
                    await self.release_all(holder)
                except Exception:  # noqa: BLE001 - slow or unreachable is not proven dead
                    pass

    async def acquire(self, holder: str, permit: str) -> bool:
        """Waits for a free permit; False when it was withdrawn while waiting."""
        async with self._changed:
            while self.in_flight >= self.limit and permit not in self._withdrawn and holder not in self._gone:
                await self._changed.wait()
            if permit in self._withdrawn or holder in self._gone:
                self._withdrawn.discard(permit)
                return False
            self.in_flight += 1
            self.granted += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._held.setdefault(holder, set()).add(permit)
            return True

    async def release(self, holder: str, permit: str) -> None:
        async with self._changed:
            held = self._held.get(holder)
            if held is not None and permit in held:
                held.discard(permit)
                self.in_flight -= 1
            elif holder not in self._gone:
                self._withdrawn.add(permit)
            self._changed.notify_all()

    async def release_all(self, holder: str) -> int:
        """Gives back every permit of ``holder`` (a worker that died); how many it held."""
        async with self._changed:
            self._gone.add(holder)
            self._actors.pop(holder, None)
            held = self._held.pop(holder, set())
            self.in_flight -= len(held)
            self._changed.notify_all()
            return len(held)

    async def stats(self) -> Dict[str, int]:
        return {"limit": self.limit, "in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
                "granted": self.granted}


class ClusterPermit:
    """``async with`` one permit of a remote :class:`TurnLimiter`, held by ``holder``."""

    def __init__(self, limiter: Any, holder: str) -> None:
        self.limiter = limiter
        self.holder = holder
        self._permits: "asyncio.Queue[str]" = asyncio.Queue()
        self._counter = 0
        self._registered = False

    async def __aenter__(self) -> None:
        if not self._registered:
            self._registered = True
            await self.limiter.register.remote(self.holder, ray.get_runtime_context().current_actor)
        self._counter += 1
        permit = f"{self.holder}#{self._counter}"
        try:
            granted = await self.limiter.acquire.remote(self.holder, permit)
        except asyncio.CancelledError:
            # Granted or not, the permit must not stay held: the limiter drops a held one, and
            # remembers not to grant one still waiting.
            self.limiter.release.remote(self.holder, permit)
            raise
        if not granted:
            raise RuntimeError("turn permit withdrawn")
        self._permits.put_nowait(permit)

    async def __aexit__(self, *exc: Any) -> None:
        # Permits are interchangeable within a holder: give back any one this worker holds.
        permit = self._permits.get_nowait()
        await self.limiter.release.remote(self.holder, permit)


class HarnessWorker:
    """Runs batch tasks on its own :class:`HarnessPool`; wrapped by ``ray.remote`` in the
    runner (as an async actor: ``max_concurrency`` is the most tasks it runs at once)."""

    def __init__(self, label: str, holder: str, options: Optional[HarnessOptions], limiter: Any,
                 max_idle_bridges: int) -> None:
        self.holder = holder  # unique across every runner sharing the limiter
        self.name = worker_name(f"ray:{label}")
        self._options = options
        self._limiter = limiter
        self._max_idle = max_idle_bridges
        self._pool: Optional[HarnessPool] = None
        #: Task calls this actor has started running (its ``info``: what it was given).
        self.runs = 0

    def _get_pool(self) -> HarnessPool:
        # Made on the actor's event loop (the pool's bridges belong to it).
        if self._pool is None:
            permit = ClusterPermit(self._limiter, self.holder) if self._limiter is not None else None
            self._pool = HarnessPool(self._options, worker=self.name, limiter=permit,
                                     max_idle_bridges=self._max_idle)
        return self._pool

    async def run(self, task: BatchTask, attempts: int) -> BatchResult:
        self.runs += 1
        return await self._get_pool().run(task, attempts)

    @ray.method(concurrency_group="control")
    async def ping(self) -> bool:
        """Answers even while every task slot is busy (its own concurrency group)."""
        return True

    async def info(self) -> Dict[str, Any]:
        pool = self._pool
        return {"name": self.name, "open_bridges": pool.open_bridges if pool else 0,
                "bridges_started": pool.bridges_started if pool else 0, "runs": self.runs,
                "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()


RemoteTurnLimiter = ray.remote(TurnLimiter)
# "control": ping answers while every task slot is busy.
RemoteHarnessWorker = ray.remote(concurrency_groups={"control": 2})(HarnessWorker)  # type: ignore[call-overload]  # Ray's stubs lack it

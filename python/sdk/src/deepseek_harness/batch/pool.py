"""``HarnessPool``: the bridges one worker process runs a batch's tasks on.

One bridge serves many sessions at once, but the protocol fixes the workspace (``cwd``) and the
model settings once per ``initialize``; so the pool keeps one :class:`AsyncDeepSeekHarness` per
(workspace, options) and runs every task of that key on it, concurrently. Bridges nobody uses
are kept for reuse up to ``max_idle_bridges`` (least recently used closed first), so a batch
over thousands of repositories does not hold thousands of processes.

A task's own failure — a workspace that does not exist, a preparing callable that raises, a
bridge that refuses the options, a turn that ends ``error`` — is its result, never an exception
out of :meth:`HarnessPool.run`; only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections import OrderedDict
from contextlib import AbstractAsyncContextManager
from typing import Any, Dict, Optional, Set

from ..api import new_session_id
from ..async_api import AsyncDeepSeekHarness
from ..errors import TransportClosedError
from ..options import HarnessOptions
from .tasks import BatchResult, BatchTask, result_of_error, result_of_turn, worker_name

__all__ = ["HarnessPool"]


class _Bridge:
    def __init__(self, harness: AsyncDeepSeekHarness) -> None:
        self.harness = harness
        self.users = 0
        self.broken = False


class HarnessPool:
    """Runs :class:`BatchTask` s on bridges shared by key (see the module's doc).

    Args:
        options: the options of tasks that bring none.
        worker: the name results carry (default ``local@host:pid``).
        limiter: entered around every turn (not around a workspace's preparation or a bridge's
            start): an ``asyncio.Semaphore`` caps this process's turns in flight; the Ray
            worker passes the cluster-wide one.
        max_idle_bridges: how many bridges without a running task stay open.
    """

    def __init__(self, options: Optional[HarnessOptions] = None, *, worker: Optional[str] = None,
                 limiter: Optional[AbstractAsyncContextManager[Any]] = None, max_idle_bridges: int = 8) -> None:
        self.options = options or HarnessOptions()
        self.worker = worker or worker_name()
        self.limiter = limiter
        self.max_idle_bridges = max_idle_bridges
        self._bridges: Dict[str, _Bridge] = {}
        self._idle: "OrderedDict[str, None]" = OrderedDict()
        self._closing: Set["asyncio.Task[None]"] = set()
        self.bridges_started = 0

    @property
    def open_bridges(self) -> int:
        return len(self._bridges)

    async def run(self, task: BatchTask, attempts: int = 1) -> BatchResult:
        """Runs ``task`` as one turn; returns its result, failures included."""
        session_id = task.session_id or new_session_id()
        try:
            workspace = await _prepare(task)
            options = dataclasses.replace(task.options or self.options, cwd=workspace)
        except Exception as exc:  # noqa: BLE001 - the task's own failure is its result
            return result_of_error(task.id, exc, self.worker, None, attempts)
        key = repr(options)
        bridge = self._acquire(key, options)
        try:
            await bridge.harness.start()
            # The turn's times are taken inside the permit, so that they bound the turn in flight.
            if self.limiter is None:
                started = time.time()
                turn = await bridge.harness.start_session(session_id).run(task.prompt)
                finished = time.time()
            else:
                async with self.limiter:
                    started = time.time()
                    turn = await bridge.harness.start_session(session_id).run(task.prompt)
                    finished = time.time()
            return result_of_turn(task, turn, self.worker, attempts, started, finished)
        except Exception as exc:  # noqa: BLE001
            started_bridge = bridge.harness.initialize_response is not None
            if isinstance(exc, TransportClosedError) or not started_bridge:
                bridge.broken = True  # the next task of this key starts a new bridge
            return result_of_error(task.id, exc, self.worker, session_id if started_bridge else None, attempts)
        finally:
            self._release(key, bridge)

    def _acquire(self, key: str, options: HarnessOptions) -> _Bridge:
        bridge = self._bridges.get(key)
        if bridge is None or bridge.broken:
            bridge = self._bridges[key] = _Bridge(AsyncDeepSeekHarness(options))
            self.bridges_started += 1
        self._idle.pop(key, None)
        bridge.users += 1
        return bridge

    def _release(self, key: str, bridge: _Bridge) -> None:
        bridge.users -= 1
        current = self._bridges.get(key) is bridge
        if bridge.broken or not current:
            if current:
                del self._bridges[key]
            if bridge.users == 0:
                self._close_later(bridge)
            return
        if bridge.users == 0:
            self._idle[key] = None
            while len(self._idle) > self.max_idle_bridges:
                old, _ = self._idle.popitem(last=False)
                self._close_later(self._bridges.pop(old))

    def _close_later(self, bridge: _Bridge) -> None:
        task = asyncio.get_running_loop().create_task(bridge.harness.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Closes every bridge (turns still in flight settle ``aborted``). Idempotent."""
        bridges, self._bridges = list(self._bridges.values()), {}
        self._idle.clear()
        await asyncio.gather(*(b.harness.close() for b in bridges), *self._closing, return_exceptions=True)

    async def __aenter__(self) -> "HarnessPool":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


async def _prepare(task: BatchTask) -> str:
    """The task's workspace as an absolute path to an existing folder; a callable runs in a
    worker thread (it may clone a repository)."""
    workspace = task.workspace
    if callable(workspace):
        workspace = await asyncio.to_thread(workspace)
    path = os.path.abspath(os.fspath(workspace))
    if not os.path.isdir(path):
        raise FileNotFoundError(f"workspace {path} of task {task.id!r} is not a folder on this worker")
    return path

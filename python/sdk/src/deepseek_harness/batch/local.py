"""A batch on this machine: an asyncio pool of ``concurrency`` task runners over one
:class:`~deepseek_harness.batch.HarnessPool` (one bridge per workspace and options, many
sessions each). The same tasks and results as the Ray runner (:mod:`deepseek_harness.ray`).
"""

from __future__ import annotations

import asyncio
from typing import AsyncGenerator, Iterable, Iterator, List, Optional, Set, Tuple

from ..options import HarnessOptions
from .pool import HarnessPool
from .progress import Progress, progress_reporter
from .tasks import BatchResult, BatchTask

__all__ = ["iter_local", "run_local", "check_unique_ids"]


def check_unique_ids(tasks: Iterable[BatchTask]) -> Iterator[BatchTask]:
    """``tasks`` as they are, raising ``ValueError`` at the first id seen twice (results are
    matched to tasks by id, so a duplicate would make one of them unanswerable)."""
    seen: Set[str] = set()
    for task in tasks:
        if not isinstance(task, BatchTask):
            raise TypeError(f"a batch takes BatchTask items, not {type(task).__name__}")
        if task.id in seen:
            raise ValueError(f"task id {task.id!r} appears twice in the batch")
        seen.add(task.id)
        yield task


async def iter_local(tasks: Iterable[BatchTask], options: Optional[HarnessOptions] = None, *,
                     concurrency: int = 8, progress: Progress = None, max_idle_bridges: int = 8,
                     pool: Optional[HarnessPool] = None) -> AsyncGenerator[BatchResult, None]:
    """Runs ``tasks`` with at most ``concurrency`` at once and yields each result as it
    completes (one per task). ``tasks`` is read lazily. Leaving the loop early (or cancelling
    it) cancels the turns in flight and closes the bridges — except those of a ``pool`` passed
    in (its bridges serve the next batch too; ``options`` and ``max_idle_bridges`` are then
    the pool's), which stays the caller's to close."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    total = len(tasks) if isinstance(tasks, (list, tuple)) else None
    reporter = progress_reporter(progress, total)
    source = check_unique_ids(tasks)
    results: "asyncio.Queue[Tuple[Optional[BatchResult], Optional[BaseException]]]" = asyncio.Queue()
    own_pool = pool is None
    if pool is None:
        pool = HarnessPool(options, max_idle_bridges=max_idle_bridges)

    run = pool.run

    async def runner() -> None:
        try:
            for task in source:  # one shared iterator: each task is taken by exactly one runner
                results.put_nowait((await run(task), None))
        except Exception as exc:  # noqa: BLE001 - a bad item of ``tasks``: raised to the caller
            results.put_nowait((None, exc))
        finally:
            results.put_nowait((None, None))

    runners = [asyncio.create_task(runner()) for _ in range(concurrency)]
    running = len(runners)
    try:
        while running:
            result, error = await results.get()
            if error is not None:
                raise error
            if result is None:
                running -= 1
                continue
            if reporter is not None:
                reporter(result)
            yield result
    finally:
        for r in runners:
            r.cancel()
        await asyncio.gather(*runners, return_exceptions=True)
        if own_pool:
            await pool.close()
        if reporter is not None:
            reporter.close()


def run_local(tasks: Iterable[BatchTask], options: Optional[HarnessOptions] = None, *,
              concurrency: int = 8, progress: Progress = None) -> List[BatchResult]:
    """:func:`iter_local` to the end, from blocking code: the results in task order."""
    ordered = list(check_unique_ids(tasks))

    async def collect() -> List[BatchResult]:
        by_id = {}
        async for result in iter_local(ordered, options, concurrency=concurrency, progress=progress):
            by_id[result.task_id] = result
        return [by_id[t.id] for t in ordered]

    return asyncio.run(collect())

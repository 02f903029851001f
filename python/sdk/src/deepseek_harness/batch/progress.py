"""Progress of a batch: a callback per result, or a bar on stderr.

``progress=`` of :func:`~deepseek_harness.batch.run_local`, :func:`~deepseek_harness.ray.run_batch`
and their iterators takes ``True`` (a bar on stderr), a :data:`ProgressCallback`, or
None/False (nothing). The bar is tqdm's when tqdm is installed — imported only then, never a
dependency — else a one-line bar of its own.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Optional, TextIO, Union

from .tasks import BatchResult

__all__ = ["ProgressCallback", "Progress", "ProgressBar", "progress_reporter"]

#: Called once per result, in the order results arrive: ``(done, total, result)``; ``total`` is
#: None when the tasks came from an iterator of unknown length.
ProgressCallback = Callable[[int, Optional[int], BatchResult], None]

Progress = Union[bool, ProgressCallback, None]


class ProgressBar:
    """A :data:`ProgressCallback` drawing ``done/total, failed, tasks/s`` on one line of
    ``stream`` (tqdm's bar when tqdm is importable and ``use_tqdm``). Call :meth:`close` at the end."""

    def __init__(self, total: Optional[int], stream: Optional[TextIO] = None, use_tqdm: bool = True,
                 initial: int = 0) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.failed = 0
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._done = initial
        self._tqdm: Any = None
        if use_tqdm:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped]  # optional
            except ImportError:
                pass
            else:
                self._tqdm = tqdm(total=total, initial=initial, file=self.stream, unit="task", dynamic_ncols=True)

    def __call__(self, done: int, total: Optional[int], result: BatchResult) -> None:
        self._done = done
        if not result.ok:
            self.failed += 1
        if self._tqdm is not None:
            self._tqdm.update(1)
            if self.failed:
                self._tqdm.set_postfix(failed=self.failed, refresh=False)
            return
        now = time.monotonic()
        if now - self._last_draw >= 0.1 or (total is not None and done >= total):
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        rate = self._done / max(now - self._start, 1e-9)
        if self.total:
            width = 30
            filled = min(width, width * self._done // self.total)
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {self._done}/{self.total}"
        else:
            bar = f"{self._done} done"
        failed = f", {self.failed} failed" if self.failed else ""
        self.stream.write(f"\r{bar}{failed}, {rate:.1f} tasks/s ")
        self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()


class _Reporter:
    def __init__(self, callback: ProgressCallback, total: Optional[int], owned: Optional[ProgressBar]) -> None:
        self.callback = callback
        self.total = total
        self.done = 0
        self.owned = owned

    def __call__(self, result: BatchResult) -> None:
        self.done += 1
        self.callback(self.done, self.total, result)

    def close(self) -> None:
        if self.owned is not None:
            self.owned.close()


def progress_reporter(progress: Progress, total: Optional[int]) -> Optional[_Reporter]:
    """What the runners call per result (None: nothing to report)."""
    if progress is None or progress is False:
        return None
    if progress is True:
        bar = ProgressBar(total)
        return _Reporter(bar, total, bar)
    if not callable(progress):
        raise TypeError(f"progress must be True, False, None or a callable, not {type(progress).__name__}")
    return _Reporter(progress, total, None)

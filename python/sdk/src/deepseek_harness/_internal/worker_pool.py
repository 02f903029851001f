"""A small pool of daemon threads for the client tools' and approval callbacks' sync functions.

Not ``concurrent.futures.ThreadPoolExecutor``: Python joins that pool's threads at interpreter
exit, so one user function that never returns (a tool stuck on I/O, an approval prompt nobody
answers) would keep the program from ever exiting after the harness closed. These threads are
daemons: a function still running when the program ends is abandoned with it, as the harness
already abandoned its answer. Threads start as jobs come, up to ``size``; jobs beyond wait in
order; ``shutdown`` drops the jobs not started and lets each thread end after its current one.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Callable, Deque

from .forking import renew_locks_in_child

__all__ = ["DaemonPool"]

log = logging.getLogger("deepseek_harness")


class DaemonPool:
    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._jobs: Deque[Callable[[], None]] = collections.deque()
        self._cond = threading.Condition()
        self._threads = 0
        self._idle = 0
        self._closed = False
        renew_locks_in_child(self, "_cond")  # a fork's close() shuts it down (see forking.py)

    def submit(self, job: Callable[[], None]) -> None:
        """Queues `job` (it must not raise: an exception is logged and the thread goes on)."""
        with self._cond:
            if self._closed:
                return
            self._jobs.append(job)
            if self._idle == 0 and self._threads < self._size:
                self._threads += 1
                threading.Thread(target=self._work, name=f"{self._name}-{self._threads}", daemon=True).start()
            else:
                self._cond.notify()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._idle += 1
                while not self._jobs and not self._closed:
                    self._cond.wait()
                self._idle -= 1
                if self._closed:
                    self._threads -= 1
                    return
                job = self._jobs.popleft()
            try:
                job()
            except BaseException:  # noqa: BLE001 - a worker must survive any job
                log.exception("a client tool job failed")

    def shutdown(self) -> None:
        """Drops the queued jobs; idle threads end now, busy ones after their job. Idempotent."""
        with self._cond:
            self._closed = True
            self._jobs.clear()
            self._cond.notify_all()

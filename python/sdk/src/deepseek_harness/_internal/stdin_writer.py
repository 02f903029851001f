"""The bridge's stdin, written without ever blocking the caller.

A request is written on the caller's thread (for the asyncio front: on the event loop) with
non-blocking writes. What the pipe does not take at once (the bridge is busy, stopped, or not
reading at all; a frame larger than the pipe's buffer) is queued, whole frames in order, and a
daemon thread carries the queue to the pipe as the bridge reads it. So a caller never waits on
the pipe: its request's timeout, a cancel, Ctrl-C, an event loop's other tasks and ``close()``
all keep working while the bridge does not read, and a frame is never torn by a caller giving
up halfway through it. A frame whose caller gave up before any byte of it was written is
withdrawn (:meth:`StdinWriter.withdraw`): what waits for a stopped bridge is bounded by the calls
still waiting, not by every call ever made while it did not read.

The carrier thread lives only while the queue is not empty. It waits for the pipe in bounded
slices, so once :meth:`StdinWriter.close` has dropped the queue it ends within one slice, even
while the bridge is still alive and not reading.
"""

from __future__ import annotations

import collections
import logging
import os
import select
import threading
from typing import IO, Callable, Deque, Optional, Tuple

__all__ = ["StdinWriter"]

log = logging.getLogger("deepseek_harness")

#: Called on the carrier thread when a queued frame could not be written (the bridge is gone).
OnError = Callable[[OSError], None]

#: How long the carrier thread waits for the pipe before it looks whether the writer was closed.
POLL_SLICE_SECONDS = 0.5


class StdinWriter:
    """Writes whole frames to a pipe in order; never blocks the writing thread."""

    def __init__(self, pipe: IO[bytes]) -> None:
        #: The pipe's file object: it owns the descriptor (and closes it once, in :meth:`close`).
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)
        #: Guards the queue, ``_closed`` and every write to the pipe (held only for non-blocking calls).
        self._lock = threading.Lock()
        #: Each frame's unwritten rest, its error callback, its owner and its whole length.
        self._queue: Deque[Tuple[memoryview, Optional[OnError], object, int]] = collections.deque()
        self._closed = False
        self._carrier: Optional[threading.Thread] = None

    @property
    def queued(self) -> int:
        """How many frames wait for the bridge to read (for diagnostics and tests)."""
        return len(self._queue)

    def write(self, data: bytes, on_error: Optional[OnError] = None, owner: object = None) -> None:
        """Writes ``data`` now as far as the pipe takes it, and queues the rest. Raises the
        ``OSError`` of a write that failed here (``BrokenPipeError``: the bridge closed its
        stdin) and ``ValueError`` once closed; a failure of the queued rest, later, is given to
        ``on_error`` instead (on the carrier thread). ``owner`` names the frame for
        :meth:`withdraw`."""
        with self._lock:
            if self._closed:
                raise ValueError("write to a closed stdin")
            view = memoryview(data)
            if not self._queue:
                view = self._write_some(view)
                if not view:
                    return
            self._queue.append((view, on_error, owner, len(data)))
            if self._carrier is None:
                self._carrier = threading.Thread(target=self._carry, name="harness-bridge-stdin", daemon=True)
                self._carrier.start()

    def withdraw(self, owner: object) -> bool:
        """Drops the queued frame of ``owner`` if none of it was written yet (its caller gave
        up: the bridge never sees it); one already begun is finished, never torn. True when a
        frame was dropped."""
        if owner is None:
            return False
        with self._lock:
            for entry in self._queue:
                if entry[2] is owner:
                    if len(entry[0]) != entry[3]:
                        return False
                    self._queue.remove(entry)
                    return True
        return False

    def close(self) -> None:
        """Drops what is queued (the bridge was not reading it) and closes the pipe: the
        bridge reads end of file. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            dropped = len(self._queue)
            self._queue.clear()
            try:
                self._pipe.close()
            except OSError:
                pass
        if dropped:
            log.debug("closing harness-bridge stdin with %d request(s) it never read", dropped)

    def join(self, timeout: float) -> None:
        """Waits (at most ``timeout``) for the carrier thread, if any, to end."""
        carrier = self._carrier
        if carrier is not None and carrier is not threading.current_thread():
            carrier.join(timeout)

    def _write_some(self, view: memoryview) -> memoryview:
        # Caller holds the lock. What the pipe did not take.
        while view:
            try:
                n = os.write(self._fd, view)
            except BlockingIOError:
                return view
            view = view[n:]
        return view

    def _carry(self) -> None:
        """The carrier thread: writes the queue's frames as the pipe drains, then ends."""
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while True:
            with self._lock:
                if self._closed or not self._queue:
                    self._carrier = None
                    return
            try:
                poller.poll(POLL_SLICE_SECONDS * 1000)
            except InterruptedError:  # pragma: no cover - retried by Python itself (PEP 475)
                continue
            with self._lock:
                if self._closed:
                    self._carrier = None
                    return
                view, on_error, owner, size = self._queue[0]
                try:
                    rest = self._write_some(view)
                except OSError as exc:
                    error = exc
                    failed = list(self._queue)
                    self._queue.clear()
                    self._carrier = None
                else:
                    if rest:
                        self._queue[0] = (rest, on_error, owner, size)
                    else:
                        self._queue.popleft()
                    continue
            log.debug("writing to harness-bridge stdin failed: %s", error)
            for _view, callback, _owner, _size in failed:
                if callback is not None:
                    _report(callback, error)
            return


def _report(callback: OnError, exc: OSError) -> None:
    try:
        callback(exc)
    except Exception:  # the carrier must end cleanly whatever a callback does
        log.exception("reporting a failed write to harness-bridge stdin failed")

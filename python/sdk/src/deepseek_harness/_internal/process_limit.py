"""The process limit (``RLIMIT_NPROC``, ``ulimit -u``) a bridge inherits, and whether it is the
likely reason the bridge hung or died as it started.

The limit counts every task (process or thread) of the user, not of the process, and Node.js
creates threads before any of the bridge's code runs: its platform workers and libuv's pool,
about 11 at start and 15 once a turn runs. Under a limit it cannot meet, measured with the binary
as an unprivileged user (x64, Linux 6.x, ``prlimit --nproc=N``, the SDK's Python counting 3),
Node's main thread waits for ever on a futex for a worker that was never created (the bridge
never answers ``initialize``: a hang, which only a timeout ends) or aborts (SIGABRT, with
``pthread_create: Resource temporarily unavailable`` or ``Assertion failed: (0) == (uv_thread_create``
on stderr, or nothing), at start or at the first turn once it has answered. Nothing the bridge
can report, so the SDK names the limit.

The kernel does not enforce the limit for root (the initial user namespace's) nor for a
process with CAP_SYS_ADMIN or CAP_SYS_RESOURCE: there it is never the cause.
"""

from __future__ import annotations

import os
import signal
from typing import Optional, Sequence, Tuple

__all__ = ["MIN_PROCESSES", "MIN_HEADROOM", "process_limit", "user_tasks", "short_of_processes", "says_thread_failed",
           "died_for_want_of_threads"]

#: A soft limit below this is too low for a bridge that runs bash and MCP servers.
MIN_PROCESSES = 64
#: Tasks the bridge needs beyond what the user already runs: its own threads and those of a
#: turn (15) and some bash commands.
MIN_HEADROOM = 32
#: What Node writes when a thread it needs cannot be created (it aborts next).
_THREAD_WORDS = ("pthread_create", "uv_thread_create", "Resource temporarily unavailable")
#: CAP_SYS_ADMIN (21) and CAP_SYS_RESOURCE (24): a process with either is exempt (kernel/fork.c).
_EXEMPTING_CAPABILITIES = (1 << 21) | (1 << 24)


def process_limit() -> Optional[Tuple[int, int]]:
    """The (soft, hard) process limit a bridge this process spawns inherits, when it is enforced
    for it; None where it is not (no limit, root, an exempting capability, not POSIX)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    limit = getattr(resource, "RLIMIT_NPROC", None)
    if limit is None:  # pragma: no cover - a POSIX without it
        return None
    soft, hard = resource.getrlimit(limit)
    if soft == resource.RLIM_INFINITY or not _enforced():
        return None
    return soft, hard


def _enforced() -> bool:
    if os.getuid() == 0:
        return False
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return not int(line.split()[1], 16) & _EXEMPTING_CAPABILITIES
    except (OSError, ValueError, IndexError):
        pass
    return True  # no /proc (not Linux): an ordinary user is subject to it


def user_tasks() -> Optional[int]:
    """How many tasks (processes and their threads) this process's real user runs now, as the
    limit counts them; None where /proc cannot tell."""
    uid = str(os.getuid())
    total = 0
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            if fields.get("Uid", "").split()[:1] == [uid]:
                total += int(fields.get("Threads", "1"))
        except (OSError, ValueError):
            continue  # it exited meanwhile, or is not ours to read
    return total or None


def short_of_processes(limit: Optional[Tuple[int, int]], tasks: Optional[int]) -> bool:
    """Whether ``limit`` (from :func:`process_limit`) leaves the bridge too few tasks: a soft
    limit below :data:`MIN_PROCESSES`, or fewer than :data:`MIN_HEADROOM` left over ``tasks``."""
    if limit is None:
        return False
    soft = limit[0]
    return soft < MIN_PROCESSES or (tasks is not None and soft - tasks < MIN_HEADROOM)


def says_thread_failed(stderr_tail: Sequence[str]) -> bool:
    """Whether the bridge's stderr says a thread could not be created."""
    return any(word in line for line in stderr_tail for word in _THREAD_WORDS)


def died_for_want_of_threads(exit_code: Optional[int], stderr_tail: Sequence[str]) -> bool:
    """Whether a bridge that ended so died as Node does when it cannot create a thread: SIGABRT,
    or a line of stderr that says so. Whether it had answered does not matter: Node creates
    threads lazily (the thread pool, at the first turn), so it may abort after ``initialize``."""
    if exit_code is None or exit_code == 0:
        return False
    return exit_code == -signal.SIGABRT or says_thread_failed(stderr_tail)

"""What a process forked from one that runs harnesses does with its copies of them.

``os.fork()`` (``multiprocessing``'s ``fork`` start method, the default on Linux before Python
3.14; gunicorn's and celery's pre-fork workers) copies every object of the parent but only the
thread that forked. A lock another thread held at that moment stays held in the child for ever:
a harness that a thread of the parent was starting (its ``initialize`` in flight) would hang the
child's first ``run()`` on its start lock instead of raising the clear "this process is a fork"
:class:`~deepseek_harness.TransportClosedError`, and a client whose lifecycle lock was held would
hang the child's ``close()``, the one its exit hook makes too. And the child would keep its
copies of the bridge's pipes open for as long as it lives, although it may never use them.

So, in the child only (:func:`os.register_at_fork`), right after the fork: the locks each object
named here are replaced with new ones (no other thread exists in the child, so none can hold
them; the state they guard is left as it was, and what the SDK does with it in a fork is only to
raise or to start afresh), and the hooks run (a bridge's closes the child's copies of its pipes).
Nothing is done in the parent, and nothing in a child made by ``subprocess`` (it runs no Python).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, List, Tuple

__all__ = ["renew_locks_in_child", "call_in_child"]

# object -> (names of its lock attributes to renew, names of its methods to call), in the child.
_registered: "weakref.WeakKeyDictionary[Any, Tuple[List[str], List[str]]]" = weakref.WeakKeyDictionary()


def renew_locks_in_child(obj: Any, *names: str) -> None:
    """In a forked child, ``obj``'s attributes ``names`` (each a ``Lock``, ``RLock`` or
    ``Condition``) become new, free ones of the same kind."""
    _entry(obj)[0].extend(names)


def call_in_child(obj: Any, method: str) -> None:
    """In a forked child, ``obj.<method>()`` is called (it must not take a lock of the parent's)."""
    _entry(obj)[1].append(method)


def _entry(obj: Any) -> Tuple[List[str], List[str]]:
    entry = _registered.get(obj)
    if entry is None:
        entry = _registered[obj] = ([], [])
    return entry


_RLOCK = type(threading.RLock())


def _fresh(old: Any) -> Any:
    if isinstance(old, threading.Condition):
        return threading.Condition()
    if isinstance(old, _RLOCK):
        return threading.RLock()
    return threading.Lock()


def _after_fork_in_child() -> None:
    # Runs inside os.fork() in the child: it must not raise, and it takes no lock.
    for obj, (locks, methods) in list(_registered.items()):
        for name in locks:
            try:
                setattr(obj, name, _fresh(getattr(obj, name)))
            except Exception:  # pragma: no cover - best effort in a fork
                pass
        for method in methods:
            try:
                getattr(obj, method)()
            except Exception:  # pragma: no cover - best effort in a fork
                pass


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)

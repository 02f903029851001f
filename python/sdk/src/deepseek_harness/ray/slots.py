"""The worker positions of a :class:`~deepseek_harness.ray.RayBatchRunner` and their health.

A slot holds one :class:`~deepseek_harness.ray.HarnessWorker` actor at a time and is in one of
three states:

- ``starting``: the actor was asked for; it gets no task until its first ``ping`` answers (it
  is placed and constructed). Tasks queued on an actor Ray cannot place would wait with it,
  for ever when the capacity it needs is gone; so they wait in the runner instead, where any
  serving worker can take them. A slot starting for longer than ``placement_timeout`` gives up
  (``retired``), unless that first answer is in by then (it came while no batch was running).
- ``serving``: it takes tasks. While it has tasks in flight it is pinged every
  ``ping_seconds``; a ping unanswered after ``lost_after_seconds``, or any call failing with
  a :data:`LOST` error, makes it *lost*.
- ``retired``: given up; takes nothing again.

Why ping: a machine that stops answering (power, network) fails its calls only when Ray's
health checks declare its node dead, tens of seconds later, while the other workers sit idle.
A lost worker's actor is killed and its tasks are taken back at once (the runner's job); the
slot starts a replacement (``starting`` again).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional, Set

import ray
from ray.exceptions import ActorUnschedulableError, NodeDiedError, ObjectLostError, RayActorError

__all__ = ["LOST", "Slot"]

#: Errors of a call that say the worker is gone or may be: dead (``ActorDiedError``), not
#: answering (``ActorUnavailableError``: "the task may or may not have been executed"), its
#: node dead, or the result lost with its node's object store. A task's own failure is never
#: one of these: the worker answers it as a result.
LOST = (RayActorError, ObjectLostError, NodeDiedError, ActorUnschedulableError)


class Slot:
    """One worker position (see the module's doc)."""

    def __init__(self, runner_tag: str, index: int) -> None:
        self.runner_tag = runner_tag
        self.index = index
        self.generation = -1
        self.actor: Any = None
        self.state = "starting"
        # The refs of this actor's task calls in flight (keys of the runner's in_flight).
        self.refs: Set[Any] = set()
        # Running a retried task alone (see RayBatchRunner.iter), or draining to run one.
        self.isolated = False
        self.reserved = False
        self.ready_ref: Any = None
        # Since when this slot has had no placed actor: kept across a replacement that died
        # starting, so that the placement wait is bounded however often that happens.
        self.waiting_since: Optional[float] = None
        self.ping_ref: Any = None
        self.ping_sent = 0.0
        self.next_ping = 0.0

    @property
    def label(self) -> str:
        return f"w{self.index}.{self.generation}"

    @property
    def holder(self) -> str:
        """The limiter's name for this actor: unique even when runners share a limiter."""
        return f"{self.runner_tag}/{self.label}"

    @property
    def serving(self) -> bool:
        return self.state == "serving"

    def started(self, actor: Any, now: float) -> None:
        """``actor`` (just created) is this slot's, starting."""
        self.generation += 1
        self.actor = actor
        self.state = "starting"
        self.refs = set()
        self.isolated = self.reserved = False
        self.ready_ref = actor.ping.remote()
        self.ping_ref = None
        if self.waiting_since is None:
            self.waiting_since = now

    def placed(self, now: float, ping_seconds: float) -> None:
        self.state = "serving"
        self.ready_ref = None
        self.waiting_since = None
        self.next_ping = now + ping_seconds

    def retire(self) -> None:
        """Gives up on this slot's actor (never placed): killed, so that it does not take
        capacity that appears later from a batch that no longer waits for it."""
        if self.actor is not None:
            ray.kill(self.actor, no_restart=True)
        self.actor = None
        self.state = "retired"
        self.ready_ref = self.ping_ref = None

    def control_refs(self) -> Dict[Any, str]:
        """The slot's outstanding ``ping`` calls: ref → ``"ready"`` or ``"ping"``."""
        refs = {}
        if self.ready_ref is not None:
            refs[self.ready_ref] = "ready"
        if self.ping_ref is not None:
            refs[self.ping_ref] = "ping"
        return refs

    def check(self, now: float, ping_seconds: float, lost_after: float, placement_timeout: float) -> Optional[str]:
        """Sends the ping that is due; what the slot's clock says: ``"lost"`` (a ping
        unanswered too long), ``"unplaced"`` (starting too long), or None."""
        # A clock is judged only on an answer not in yet: one that came while the runner was not
        # looking (no batch running, e.g. between start() and the first batch) is taken in by
        # the runner's next wait, not mistaken for a timeout.
        if self.state == "starting":
            if self.waiting_since is not None and now - self.waiting_since >= placement_timeout:
                return None if _answered(self.ready_ref) else "unplaced"
            return None
        if self.state != "serving" or not self.refs:
            return None
        if self.ping_ref is not None:
            return "lost" if now - self.ping_sent >= lost_after and not _answered(self.ping_ref) else None
        if now >= self.next_ping:
            self.ping_ref = self.actor.ping.remote()
            self.ping_sent = now
        return None

    def deadline(self, lost_after: float, placement_timeout: float) -> Optional[float]:
        """When :meth:`check` next has something to do (monotonic seconds), if ever."""
        if self.state == "starting" and self.waiting_since is not None:
            return self.waiting_since + placement_timeout
        if self.state != "serving" or not self.refs:
            return None
        return self.ping_sent + lost_after if self.ping_ref is not None else self.next_ping

    def answered_ping(self, now: float, ping_seconds: float) -> None:
        self.ping_ref = None
        self.next_ping = now + ping_seconds


def _answered(ref: Any) -> bool:
    """Whether ``ref`` (a ``ping``) has its answer (or its error) here already."""
    return ref is not None and bool(ray.wait([ref], timeout=0)[0])


def monotonic() -> float:
    return time.monotonic()

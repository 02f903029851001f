"""Batches on a real multi-node Ray cluster on this machine (ray_cluster_support.py), through
the real binary, when a worker is lost while its node stays: one that stops answering (SIGSTOP:
a machine cut off), one that comes back after it was lost (SIGCONT: its late answers are never
read), one killed with ``ray.kill``; and workers placed while no batch ran are not given up.
The tests share one cluster.

Skipped without Ray, except with ``HARNESS_REQUIRE_RAY=1`` (CI), where that fails.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, List

import pytest

from ray_required import import_ray

ray = import_ray()

from conftest import call_within
from deepseek_harness.batch import BatchResult
from deepseek_harness.ray import RayBatchRunner
from ray_cluster_support import (  # noqa: F401 - fixtures, found by name
    NO_WATCHDOG, ON_WORKER_NODE, NodeCluster, _module_cleanup, busy, check_batch, gone, late_end, placed, resume,
    run_with_fault, shared_cluster, slow_tasks,
)


def test_a_worker_that_stops_answering_is_lost_without_waiting_for_ray(shared_cluster: NodeCluster,
                                                                       tmp_path: Path) -> None:
    # SIGSTOP: the process is there but answers nothing, as a machine cut off from the network;
    # Ray would not declare it dead for a long time. The runner's ping does, after 3 s.
    options, tasks = slow_tasks(tmp_path)
    stopped: List[int] = []
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, ping_seconds=0.5,
                        lost_after_seconds=3, limiter_check_seconds=NO_WATCHDOG,
                        worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)

        def stop() -> None:
            stopped.append(where["w1.0"]["pid"])
            os.kill(stopped[0], signal.SIGSTOP)

        try:
            results = run_with_fault(runner, tasks, stop)
        finally:
            for pid in stopped:  # let it take the kill Ray sent it
                resume(pid)
        counts = (runner.workers_lost, runner.workers_unplaced)
        permits = runner.stats()["in_flight"]
    retried = check_batch(results, tasks, tmp_path)
    assert 1 <= len(retried) <= 2
    assert counts == (1, 0)
    assert permits == 0, "the lost worker's permits were given back"


@pytest.mark.parametrize("kill_lands", [True, False], ids=["kill-lands", "kill-held-back"])
def test_a_lost_worker_that_comes_back_is_never_read_nor_given_a_task(shared_cluster: NodeCluster, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      kill_lands: bool) -> None:
    # A worker cut off (SIGSTOP) is lost after 3 s and its tasks (1 or 2) run again elsewhere;
    # once the runner has given it up it comes back (SIGCONT) while the batch still runs, its
    # bridge's turns finished meanwhile. kill-lands: the runner's kill reaches it, so its calls
    # end late, mostly with ActorDiedError (a result if it answered before the kill arrived).
    # kill-held-back: the kill never reaches it (held here until the end, as over a cut
    # network), so it finishes its abandoned turns and their results reach this driver. Either
    # way the runner reads none of it: one result per task (the retried one), the replacement
    # not lost for it, no permit counted twice, nothing new given to it, and its process ends.
    options, tasks = slow_tasks(tmp_path)
    stopped: List[int] = []
    abandoned: List[Any] = []  # the lost worker's calls, kept here so their late ends can be read
    held: List[Any] = []
    real_kill = ray.kill
    try:
        with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, ping_seconds=0.5,
                            lost_after_seconds=3, limiter_check_seconds=NO_WATCHDOG,
                            worker_options=ON_WORKER_NODE) as runner:
            where = placed(runner)
            victim = runner.workers[1]
            replace = runner._replace

            def spy_replace(slot: Any) -> None:
                abandoned.extend(slot.refs)
                replace(slot)

            def kill(actor: Any, **kwargs: Any) -> None:
                if not kill_lands and actor._actor_id == victim._actor_id:
                    held.append(actor)
                else:
                    real_kill(actor, **kwargs)
                if actor._actor_id == victim._actor_id:
                    abandoned_now.set()

            monkeypatch.setattr(runner, "_replace", spy_replace)
            monkeypatch.setattr(ray, "kill", kill)

            done, abandoned_now = threading.Event(), threading.Event()

            def stop() -> None:
                stopped.append(where["w1.0"]["pid"])
                os.kill(stopped[0], signal.SIGSTOP)

                def revive_once_lost() -> None:  # once the runner has given it up
                    while not abandoned_now.wait(0.05) and not done.is_set():
                        pass
                    resume(stopped[0])

                threading.Thread(target=revive_once_lost, daemon=True).start()

            try:
                results = run_with_fault(runner, tasks, stop)
            finally:
                done.set()
                for pid in stopped:
                    resume(pid)
            # Every abandoned call has ended by now, one way or the other.
            late = call_within(120, lambda: [late_end(ref) for ref in abandoned])
            late_results = [end for end in late if isinstance(end, BatchResult)]
            stats = runner.stats()
            given = None if kill_lands else call_within(60, ray.get, victim.info.remote())["runs"]
            counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
    finally:
        for actor in held:  # the kill held back lands now
            real_kill(actor, no_restart=True)

    retried = check_batch(results, tasks, tmp_path)
    assert 1 <= len(abandoned) <= 2 and len(retried) == len(abandoned), [(r.task_id, r.attempts) for r in results]
    assert all(not r.worker.startswith("ray:w1.0@") for r in retried)
    assert counts == (3, 1, 0), "the lost worker's late ends did not cost its replacement"
    assert stats["in_flight"] == 0 and stats["max_in_flight"] <= 4, stats
    if not kill_lands:
        # Its late results did arrive (here), and none of them is among the batch's.
        assert len(late_results) == len(abandoned), late
        assert {r.task_id for r in late_results} == {r.task_id for r in retried}
        assert not {r.session_id for r in late_results} & {r.session_id for r in results}
        from_victim = [r for r in results if r.worker.startswith("ray:w1.0@")]
        assert given == len(from_victim) + len(abandoned), "the revived worker was given nothing more"
    assert call_within(120, gone, stopped[0]), "the abandoned worker's process ends (killed)"


def test_a_worker_killed_by_ray_kill_is_replaced_on_its_node(shared_cluster: NodeCluster, tmp_path: Path) -> None:
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2,
                        limiter_check_seconds=NO_WATCHDOG, worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)
        victim = runner.workers[1]
        results = run_with_fault(runner, tasks, lambda: ray.kill(victim, no_restart=True), when=busy(runner, "w1.0"))
        after = placed(runner)
        counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
        permits = runner.stats()["in_flight"]
    retried = check_batch(results, tasks, tmp_path)
    assert 1 <= len(retried) <= 2
    assert counts == (3, 1, 0)
    assert permits == 0, "the killed worker's permits were given back"
    assert after["w1.1"]["node_id"] == where["w1.0"]["node_id"], "the freed capacity took the replacement"


def test_workers_placed_while_no_batch_ran_are_not_given_up(shared_cluster: NodeCluster, tmp_path: Path) -> None:
    # placement_timeout bounds the wait for a placement, not the time before the next batch:
    # workers placed after start() (or a replacement placed after its batch ended) whose first
    # answer no batch has taken in yet serve the next batch, however late it comes.
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, placement_timeout=2,
                        worker_options=ON_WORKER_NODE) as runner:
        placed(runner)
        time.sleep(3)  # past placement_timeout, the answers in but not yet read
        results = call_within(120, runner.run, tasks[:4])
        counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
    assert [(r.task_id, r.status) for r in results] == [(t.id, "ok") for t in tasks[:4]], [r.error for r in results]
    assert counts == (2, 0, 0)

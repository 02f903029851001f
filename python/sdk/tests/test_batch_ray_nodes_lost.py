"""Batches on a real multi-node Ray cluster on this machine (ray_cluster_support.py), through
the real binary, when a worker node is lost mid-batch (``remove_node(..., allow_graceful=False)``,
as when a machine is lost): with a spare node, its tasks run there; with none, the other worker
finishes them, and a batch with no worker node left is answered, not hung. Each test has a
cluster of its own.

Skipped without Ray, except with ``HARNESS_REQUIRE_RAY=1`` (CI), where that fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray_required import import_ray

import_ray()

from conftest import call_within
from deepseek_harness.ray import RayBatchRunner
from ray_cluster_support import (  # noqa: F401 - fixtures, found by name
    NO_WATCHDOG, ON_WORKER_NODE, _module_cleanup, busy, check_batch, own_cluster, placed, run_with_fault, slow_tasks,
)


def test_a_node_lost_mid_batch_its_tasks_run_on_the_spare_node(own_cluster: Any, tmp_path: Path) -> None:
    cluster = own_cluster(3)  # two workers, one spare node
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2,
                        limiter_check_seconds=NO_WATCHDOG, worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)
        spare = ({n.node_id for n in cluster.nodes} - {i["node_id"] for i in where.values()}).pop()
        results = run_with_fault(runner, tasks, lambda: cluster.lose(where["w1.0"]["node_id"]), when=busy(runner, "w1.0"))
        after = placed(runner)
        counts = (runner.workers_started, runner.workers_lost, runner.workers_unplaced)
        permits = runner.stats()["in_flight"]
    retried = check_batch(results, tasks, tmp_path)
    assert permits == 0, "the lost worker's permits were given back"
    # The tasks in flight on the lost worker (its concurrency at most) ran again elsewhere.
    assert 1 <= len(retried) <= 2, [(r.task_id, r.attempts, r.worker) for r in results]
    assert all(not r.worker.startswith("ray:w1.0@") for r in retried)
    assert counts == (3, 1, 0)
    assert after["w1.1"]["node_id"] == spare, "the replacement took the spare node"


def test_a_node_lost_for_good_the_other_worker_finishes_then_none_left_is_answered(own_cluster: Any,
                                                                                   tmp_path: Path) -> None:
    cluster = own_cluster(2)  # no spare: the replacement can never be placed
    options, tasks = slow_tasks(tmp_path)
    with RayBatchRunner(options, workers=2, max_turns_in_flight=4, worker_concurrency=2, placement_timeout=3,
                        lost_after_seconds=3, worker_options=ON_WORKER_NODE) as runner:
        where = placed(runner)
        results = run_with_fault(runner, tasks, lambda: cluster.lose(where["w1.0"]["node_id"]), when=busy(runner, "w1.0"))
        retried = check_batch(results, tasks, tmp_path)
        assert 1 <= len(retried) <= 2
        assert {r.worker.split("@")[0] for r in retried} == {"ray:w0.0"}, "the survivor ran them again"
        assert {r.worker.split("@")[0] for r in results} <= {"ray:w0.0", "ray:w1.0"}, "the replacement ran nothing"
        # The replacement was (most likely: the turns left outlast its 3 s) given up meanwhile;
        # not asserted here, as that is a race of clocks.
        assert runner.workers_lost == 1 and runner.workers_unplaced <= 1

        # Then the last worker node goes too: a batch with no capacity left is answered, not hung.
        cluster.lose(where["w0.0"]["node_id"])
        last = call_within(120, runner.run, tasks[:2])
        counts = (runner.workers_lost, runner.workers_unplaced)
    assert [(r.task_id, r.status, r.error["type"]) for r in last] == [
        ("task-00", "error", "NoWorkersError"), ("task-01", "error", "NoWorkersError")]
    assert all(r.attempts == 2 for r in last), "their first attempt died with the last worker"
    assert counts == (2, 2), "both workers lost, both replacements given up unplaced"

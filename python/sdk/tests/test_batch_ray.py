"""Batches on a real local Ray cluster (``ray.init`` with 2 CPUs, one for the whole module),
through the real binary: 200 tasks over 4 workers with one killed mid-batch, the cluster-wide
cap on turns in flight, a task's own failures, a task that kills its worker every time, and
the batch command with ``--ray-address local`` interrupted and resumed.

Skipped without Ray, except with ``HARNESS_REQUIRE_RAY=1`` (CI), where that fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from ray_required import import_ray

ray = import_ray()

import batch_support
from batch_support import assert_log_equals_result, scripted_options, workspaces, write_script
from conftest import call_within
from deepseek_harness.batch import BatchResult, BatchTask
from deepseek_harness.ray import RayBatchRunner, run_batch
from test_batch_local import check_resumed, command, interrupt_when, read_results, write_tasks

# Workspace callables defined in the tests travel by value: the workers cannot import this folder.
ray.cloudpickle.register_pickle_by_value(batch_support)

CAP = 6


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    # A short path of its own: Ray puts its sockets under it (and never under $HOME).
    temp = tempfile.mkdtemp(prefix="hbray-")
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_TMPDIR")}
    os.environ["RAY_AUTH_MODE"] = "disabled"  # else Ray writes a token to ~/.ray
    os.environ["RAY_TMPDIR"] = temp
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024 * 1024,
             _temp_dir=temp, log_to_driver=False)
    try:
        yield temp
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(temp, ignore_errors=True)


def max_overlap(results: List[BatchResult]) -> int:
    """The most turns in flight at once, from the turns' own times (one machine: one clock)."""
    edges = sorted([(r.started_at, 1) for r in results] + [(r.finished_at, -1) for r in results],
                   key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_two_hundred_tasks_over_four_workers_one_killed_mid_batch(cluster: str, tmp_path: Path) -> None:
    options = scripted_options(tmp_path, write_script(tmp_path / "s.json", "finished", delay_ms=8, chunk=2))
    repos = workspaces(tmp_path, 4)
    tasks = [BatchTask(id=f"task-{i:03d}", prompt=f"prompt {i}",
                     workspace=repos[i % 4] if i % 10 else batch_support.Prepared(tmp_path / "prepared"))
             for i in range(200)]
    results: List[BatchResult] = []
    runner = RayBatchRunner(options, workers=4, max_turns_in_flight=CAP, worker_concurrency=4)
    killed: List[Any] = []
    replaced: List[Any] = []

    def drive() -> None:
        with runner:
            for r in runner.iter(tasks):
                results.append(r)
                if len(results) == 40:
                    killed.append(runner.workers[1])
                    ray.kill(runner.workers[1], no_restart=True)
                elif killed and not replaced and runner.workers_started == 5:
                    # The replacement is asked for: the batch waits (this loop does not pull) until
                    # it answers, so that work is left for it. Without the wait, the three others
                    # could finish the batch while it starts (a loaded machine: seconds).
                    replaced.append(runner.workers[1])
                    ray.get(replaced[0].ping.remote(), timeout=120)
            stats.update(runner.stats())

    stats: Dict[str, int] = {}
    call_within(300, drive)

    assert killed, "a worker was killed mid-batch"
    assert sorted(r.task_id for r in results) == [t.id for t in tasks], "every task answered exactly once"
    failures = [r for r in results if not r.ok]
    assert failures == []
    retried = [r for r in results if r.attempts == 2]
    assert retried, "the killed worker's tasks in flight ran again elsewhere"
    assert all(r.attempts <= 2 for r in results)
    assert runner.workers_started == 5  # the dead one was replaced
    assert {r.worker.split("@")[0] for r in results} >= {"ray:w0.0", "ray:w2.0", "ray:w3.0", "ray:w1.1"}
    for r in results:
        assert r.final_response == "finished"
        assert r.events[0]["data"]["content"] == [{"type": "text", "text": f"prompt {int(r.task_id[5:])}"}]
        assert_log_equals_result(tmp_path / "sessions", r)
    # The cap held across the four workers (16 tasks given out at once), and was reached.
    assert max_overlap(results) <= CAP
    assert stats["max_in_flight"] == CAP and stats["in_flight"] == 0, stats


def test_a_tasks_own_failures_are_answered_once_without_retry(cluster: str, tmp_path: Path) -> None:
    import dataclasses

    options = scripted_options(tmp_path, write_script(tmp_path / "s.json", "fine"))
    broken = dataclasses.replace(options, model=str(write_script(
        tmp_path / "e.json", error={"message": "invalid key", "httpStatus": 401})))
    (repo,) = workspaces(tmp_path, 1)
    lock = threading.Lock()
    tasks = [
        BatchTask("ok", "x", repo),
        BatchTask("model-error", "x", repo, options=broken),
        BatchTask("missing", "x", tmp_path / "nope"),
        BatchTask("raises", "x", batch_support.Failing("no such repository")),
        BatchTask("unpicklable", "x", lambda: (lock, str(repo))[1]),
        BatchTask("ok-2", "x", str(repo)),
    ]
    seen: List[Tuple[int, Any, str]] = []
    results = call_within(180, run_batch, tasks, options, workers=2, max_turns_in_flight=2,
                          progress=lambda d, t, r: seen.append((d, t, r.task_id)))
    by_id = {r.task_id: r for r in results}
    assert [r.task_id for r in results] == [t.id for t in tasks]
    assert by_id["ok"].ok and by_id["ok-2"].ok
    assert by_id["model-error"].reason["kind"] == "model-error" and by_id["model-error"].error is None
    assert by_id["missing"].error["type"] == "FileNotFoundError"
    assert by_id["raises"].error == {"type": "RuntimeError", "message": "no such repository"}
    assert by_id["unpicklable"].status == "error" and "lock" in by_id["unpicklable"].error["message"].lower()
    assert all(r.attempts == 1 for r in results)
    assert [d for d, _, _ in seen] == [1, 2, 3, 4, 5, 6] and {t for _, t, _ in seen} == {6}


def test_a_task_that_kills_its_worker_each_time_is_answered_after_max_attempts(cluster: str, tmp_path: Path) -> None:
    options = scripted_options(tmp_path, write_script(tmp_path / "s.json", "fine"))
    (repo,) = workspaces(tmp_path, 1)
    tasks = [BatchTask(f"ok-{i}", "x", repo) for i in range(6)]
    tasks.insert(3, BatchTask("poison", "x", batch_support.ExitProcess()))
    with RayBatchRunner(options, workers=2, max_turns_in_flight=2, max_attempts=3) as runner:
        results = call_within(180, runner.run, tasks)
        started = runner.workers_started
    by_id = {r.task_id: r for r in results}
    poison = by_id["poison"]
    assert (poison.status, poison.attempts, poison.error["type"]) == ("error", 3, "WorkerDiedError"), poison
    # A task that shared the worker with it died once with it, then ran again alone and passed.
    assert all(by_id[f"ok-{i}"].ok and by_id[f"ok-{i}"].attempts <= 2 for i in range(6)), \
        [(r.task_id, r.status, r.error, r.attempts) for r in results]
    assert started == 2 + 3  # each death replaced the worker


def test_batch_command_on_ray_interrupted_then_resumed(cluster: str, tmp_path: Path) -> None:
    n = 60
    # ~0.25 s a task: the signal lands mid-batch even when a busy machine holds the poller back.
    write_script(tmp_path / "script.json", "finished", delay_ms=60, chunk=2)
    tasks, out = write_tasks(tmp_path, n), tmp_path / "results.jsonl"
    ray_tmp = tempfile.mkdtemp(prefix="hbcli-")
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_TMPDIR=ray_tmp)
    env.pop("RAY_ADDRESS", None)
    env.pop("HARNESS_SESSION_ROOT", None)
    args = ["--ray-address", "local", "--workers", "2", "--concurrency", "4"]
    try:
        proc = subprocess.Popen(command(tmp_path, tasks, out, *args), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        interrupt_when(out, proc, 10, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err.decode()
        first_run = read_results(out)
        assert 10 <= len(first_run) < n, "interrupted mid-batch"

        again = subprocess.run(command(tmp_path, tasks, out, *args), env=env, capture_output=True, timeout=300)
        assert again.returncode == 0, again.stderr.decode()
        assert f"{n} tasks, {len(first_run)} already in".encode() in again.stderr
        check_resumed(out, n, first_run, tmp_path)
        assert {r["worker"].split("@")[0] for r in read_results(out)} <= {"ray:w0.0", "ray:w1.0"}
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_runners_sharing_a_named_limiter_share_its_cap(cluster: str, tmp_path: Path) -> None:
    options = scripted_options(tmp_path, write_script(tmp_path / "s.json", "shared", delay_ms=8, chunk=2))
    repos = workspaces(tmp_path, 2)
    results: Dict[str, List[BatchResult]] = {}

    def batch(name: str, repo: Path) -> None:
        tasks = [BatchTask(f"{name}-{i}", "x", repo) for i in range(40)]
        results[name] = run_batch(tasks, options, workers=2, max_turns_in_flight=3, worker_concurrency=4,
                                  limiter_name="shared-cap-test")

    threads = [threading.Thread(target=batch, args=(name, repo)) for name, repo in zip("ab", repos)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)  # a hang guard
    assert sorted(results) == ["a", "b"]
    both = results["a"] + results["b"]
    assert [(r.task_id, r.error, r.reason) for r in both if not r.ok] == [] and len(both) == 80
    # 2 runners x 2 workers x 4 tasks could run 16 turns at once; the one shared cap allowed 3.
    assert max_overlap(both) <= 3
    a, b = results["a"], results["b"]
    assert min(r.started_at for r in a) < max(r.finished_at for r in b), "the batches ran at the same time"
    assert min(r.started_at for r in b) < max(r.finished_at for r in a), "the batches ran at the same time"
    # Detached: it outlived the runner that made it, and serves until killed.
    shared = ray.get_actor("shared-cap-test", namespace="deepseek_harness")
    stats = ray.get(shared.stats.remote())
    ray.kill(shared)
    assert stats["granted"] == 80 and stats["max_in_flight"] == 3 and stats["in_flight"] == 0, stats


def test_the_limiter_takes_back_the_permits_of_a_worker_that_died_unannounced(cluster: str, tmp_path: Path) -> None:
    # A runner would release a dead worker's permits itself; here nobody does (as when the
    # runner's own process died too, with a shared limiter living on): the limiter's check does.
    from deepseek_harness.ray.worker import RemoteHarnessWorker, RemoteTurnLimiter

    script = tmp_path / "hang.json"
    script.write_text(json.dumps({"turns": [{"steps": [{"text": "thinking", "hang": True}]}]}))
    options = scripted_options(tmp_path, script)
    (repo,) = workspaces(tmp_path, 1)
    limiter = RemoteTurnLimiter.options(num_cpus=0, max_concurrency=100).remote(1, 0.5)
    worker = RemoteHarnessWorker.options(num_cpus=0, max_concurrency=2).remote(
        "w", "test/w", options, limiter, 1)
    hanging = worker.run.remote(BatchTask("hangs", "x", repo), 1)
    call_within(60, lambda: wait_for_stats(limiter, lambda s: s["in_flight"] == 1))
    ray.kill(worker, no_restart=True)
    # The one permit comes back, and the next turn can start.
    assert call_within(60, ray.get, limiter.acquire.remote("driver", "driver#1")) is True
    assert ray.get(limiter.stats.remote())["in_flight"] == 1
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(hanging, timeout=60)
    ray.kill(limiter)


def wait_for_stats(limiter: Any, pred: Any) -> None:
    import time

    while not pred(ray.get(limiter.stats.remote())):
        time.sleep(0.05)

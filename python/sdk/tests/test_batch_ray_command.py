"""The batch command on a real multi-node Ray cluster on this machine (ray_cluster_support.py),
through the real binary: SIGKILLed mid-batch, then run again, it answers each task once and
keeps what the first run answered.

Skipped without Ray, except with ``HARNESS_REQUIRE_RAY=1`` (CI), where that fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from ray_required import import_ray

import_ray()

from batch_support import write_script
from ray_cluster_support import N, NodeCluster, _module_cleanup, shared_cluster  # noqa: F401 - fixtures, found by name
from test_batch_local import check_resumed, command, interrupt_when, read_results, write_tasks


def test_batch_command_sigkilled_on_the_cluster_then_run_again(shared_cluster: NodeCluster, tmp_path: Path) -> None:
    write_script(tmp_path / "script.json", "finished", delay_ms=300, chunk=2)
    tasks, out = write_tasks(tmp_path, N), tmp_path / "results.jsonl"
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.pop("HARNESS_SESSION_ROOT", None)
    args = ["--ray-address", shared_cluster.cluster.address, "--workers", "2", "--concurrency", "4"]
    proc = subprocess.Popen(command(tmp_path, tasks, out, *args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    interrupt_when(out, proc, 3, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    first_run = read_results(out)
    assert 3 <= len(first_run) < N, "killed mid-batch"

    again = subprocess.run(command(tmp_path, tasks, out, *args), env=env, capture_output=True, timeout=180)
    assert again.returncode == 0, again.stderr.decode()
    assert f"{N} tasks, {len(first_run)} already in".encode() in again.stderr
    check_resumed(out, N, first_run, tmp_path)  # 12 lines, one per task, the first run's kept
    assert all(r["attempts"] == 1 for r in read_results(out)), "the rerun starts the unanswered tasks afresh"

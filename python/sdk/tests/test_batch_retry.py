"""``python -m deepseek_harness.batch --retry-failed``: a first run that failed every task (no
script, no key: a setup mistake) could not be rerun — the results file answered every id, so
the next run said "0 to run" and exited 1 for ever, short of deleting the file."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from batch_support import write_script
from test_batch_local import command, env, read_results, write_tasks


def test_failed_tasks_are_run_again_with_retry_failed_and_the_latest_result_wins(tmp_path: Path) -> None:
    tasks, out = write_tasks(tmp_path, 4), tmp_path / "results.jsonl"
    # The script the command names does not exist yet: every task fails at the bridge's initialize.
    first = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=120)
    assert first.returncode == 1 and b"ran 4: 0 ok, 4 failed" in first.stderr, first.stderr.decode()
    assert {r["error"]["type"] for r in read_results(out)} == {"ProviderUnavailableError"}

    write_script(tmp_path / "script.json", "finished")
    # Without the flag nothing runs, and the message says what would.
    again = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=60)
    assert again.returncode == 1
    assert b"0 to run" in again.stderr
    assert b"of the 4 earlier results" in again.stderr and b"4 failed (--retry-failed runs them again)" in again.stderr

    retry = subprocess.run(command(tmp_path, tasks, out, "--retry-failed"), env=env(), capture_output=True, timeout=120)
    assert retry.returncode == 0, retry.stderr.decode()
    assert b"4 tasks, 0 already in" in retry.stderr and b"4 to run (4 of them failed before: retried)" in retry.stderr
    assert b"ran 4: 4 ok, 0 failed" in retry.stderr
    results = read_results(out)
    # The history is kept: each task's failed result, then its ok one.
    assert Counter(r["task_id"] for r in results) == {f"task-{i:03d}": 2 for i in range(4)}
    assert [r["status"] for r in results[4:]] == ["ok"] * 4

    # The latest result is the one that counts: a plain rerun has nothing to do and exits 0.
    plain = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=60)
    assert plain.returncode == 0, plain.stderr.decode()
    assert b"4 already in" in plain.stderr and b"of the 4 earlier results" in plain.stderr
    assert b"--retry-failed" not in plain.stderr
    assert len(read_results(out)) == 8


def test_retry_failed_leaves_ok_results_alone_and_a_task_that_fails_again_still_fails_the_run(tmp_path: Path) -> None:
    write_script(tmp_path / "script.json", "finished")
    failing = {"id": "nowhere", "prompt": "x", "workspace": str(tmp_path / "missing")}
    tasks, out = write_tasks(tmp_path, 2, [failing]), tmp_path / "results.jsonl"
    first = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=120)
    assert first.returncode == 1 and b"2 ok, 1 failed" in first.stderr, first.stderr.decode()

    retry = subprocess.run(command(tmp_path, tasks, out, "--retry-failed"), env=env(), capture_output=True, timeout=120)
    assert retry.returncode == 1, retry.stderr.decode()
    assert b"2 already in" in retry.stderr and b"1 to run (1 of them failed before: retried)" in retry.stderr
    assert b"ran 1: 0 ok, 1 failed; of the 2 earlier results" in retry.stderr
    assert Counter(r["task_id"] for r in read_results(out)) == {"task-000": 1, "task-001": 1, "nowhere": 2}

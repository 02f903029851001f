"""Batches on this machine, through the real binary: ``run_local`` / ``iter_local`` and the batch
command (``python -m deepseek_harness.batch``) end to end, interrupted and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from deepseek_harness.batch import BatchResult, BatchTask, ProgressBar, run_local
from deepseek_harness.batch.files import ResultWriter, finished_ids

from batch_support import assert_log_equals_result, scripted_options, workspaces, write_script
from conftest import call_within, real_bridge_or_skip

import dataclasses


def test_run_local_answers_every_task_in_order_with_its_own_failures(tmp_path: Path) -> None:
    options = scripted_options(tmp_path, write_script(tmp_path / "ok.json", "all good", delay_ms=2, chunk=4))
    broken = dataclasses.replace(options, model=str(write_script(
        tmp_path / "err.json", "partial", error={"message": "quota exceeded", "httpStatus": 400})))
    repos = workspaces(tmp_path, 3)
    prepared: List[str] = []

    def prepare() -> str:  # a workspace made on demand, as a clone into a temporary folder would be
        ws = tmp_path / "prepared"
        ws.mkdir(exist_ok=True)
        prepared.append(str(ws))
        return str(ws)

    def explode() -> str:
        raise RuntimeError("clone failed: no such repository")

    tasks = [BatchTask(id=f"t{i}", prompt=f"task {i}", workspace=repos[i % 3]) for i in range(30)]
    tasks += [
        BatchTask(id="prepared", prompt="in a prepared workspace", workspace=prepare),
        BatchTask(id="missing", prompt="nowhere", workspace=tmp_path / "does-not-exist"),
        BatchTask(id="unclonable", prompt="x", workspace=explode),
        BatchTask(id="model-error", prompt="fails", workspace=repos[0], options=broken),
        BatchTask(id="named", prompt="named session", workspace=repos[1], session_id="my-session"),
        BatchTask(id="refused", prompt="x", workspace=repos[2],
                  options=dataclasses.replace(options, permission_mode="everything")),
    ]
    seen: List[Tuple[int, Optional[int], str]] = []
    results = call_within(120, run_local, tasks, options, concurrency=6,
                          progress=lambda done, total, r: seen.append((done, total, r.task_id)))

    assert [r.task_id for r in results] == [t.id for t in tasks]
    by_id: Dict[str, BatchResult] = {r.task_id: r for r in results}
    for i in range(30):
        r = by_id[f"t{i}"]
        assert (r.status, r.final_response, r.error, r.attempts) == ("ok", "all good", None, 1), r
        assert r.events[0]["data"]["content"] == [{"type": "text", "text": f"task {i}"}]
        assert_log_equals_result(tmp_path / "sessions", r)
    assert by_id["prepared"].ok and prepared == [str(tmp_path / "prepared")]
    assert by_id["missing"].status == "error" and by_id["missing"].error["type"] == "FileNotFoundError"
    assert "does-not-exist" in by_id["missing"].error["message"]
    assert by_id["unclonable"].error == {"type": "RuntimeError", "message": "clone failed: no such repository"}
    # A model error is the turn's own outcome: answered once, with the bridge's reason.
    err = by_id["model-error"]
    assert (err.status, err.reason["kind"], err.error) == ("error", "model-error", None), err
    assert "quota exceeded" in err.reason["message"]
    assert by_id["named"].session_id == "my-session"
    # Options the bridge refuses at initialize: that task's failure; its key's bridge is dropped.
    assert by_id["refused"].error["type"] == "InvalidParamsError" and "permissionMode" in by_id["refused"].error["message"]
    with_session = [r.session_id for r in results if r.session_id]
    assert len(with_session) == len(set(with_session)) == 33  # a fresh session per task otherwise
    # The progress callback saw each result once, counting up to the total.
    assert [d for d, _, _ in seen] == list(range(1, len(tasks) + 1))
    assert {t for _, t, _ in seen} == {len(tasks)}
    assert sorted(i for _, _, i in seen) == sorted(t.id for t in tasks)


def test_run_local_refuses_duplicate_ids_before_running_anything(tmp_path: Path) -> None:
    options = scripted_options(tmp_path, write_script(tmp_path / "s.json"))
    (ws,) = workspaces(tmp_path, 1)
    with pytest.raises(ValueError, match="'a' appears twice"):
        run_local([BatchTask("a", "x", ws), BatchTask("a", "y", ws)], options)
    assert not (tmp_path / "sessions").exists()


def test_progress_bar_draws_without_tqdm(tmp_path: Path) -> None:
    import io

    out = io.StringIO()
    bar = ProgressBar(4, stream=out, use_tqdm=False)
    ok = BatchResult("a", "ok", {"kind": "completed"}, "")
    bad = BatchResult("b", "error", None, "", error={"type": "X", "message": "m"})
    for i, r in enumerate([ok, bad, ok, ok], 1):
        bar(i, 4, r)
    bar.close()
    last = out.getvalue().rstrip("\n").split("\r")[-1]
    assert last.startswith("[" + "#" * 30 + "] 4/4, 1 failed, ") and "tasks/s" in last


def test_result_writer_cuts_a_torn_last_line(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    good = BatchResult("a", "ok", {"kind": "completed"}, "x")
    out.write_text(good.to_json() + "\n" + '{"task_id": "b", "sta')  # died mid-write
    assert finished_ids(out) == {"a"}
    with ResultWriter(out) as w:
        w.write(dataclasses.replace(good, task_id="b"))
    lines = out.read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == ["a", "b"]


# -- the batch command -----------------------------------------------------------------------


# Runs argv[1:] with SIGINT at its default: a Python started with SIGINT ignored (what a shell
# does to a background job without job control, and what this test process may have inherited)
# keeps it ignored, and the interrupt tests' Ctrl-C would never arrive.
DEFAULT_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"


def command(tmp_path: Path, tasks: Path, out: Path, *extra: str) -> List[str]:
    return [sys.executable, "-c", DEFAULT_SIGINT,
            sys.executable, "-m", "deepseek_harness.batch", str(tasks), "--out", str(out),
            "--provider", "scripted", "--model", str(tmp_path / "script.json"),
            "--session-root", str(tmp_path / "sessions"), "--no-progress",
            "--options", json.dumps({"bridge_bin": str(real_bridge_or_skip()), "shutdown_timeout_seconds": 5}),
            *extra]


def write_tasks(tmp_path: Path, n: int, extra: Optional[List[Dict[str, Any]]] = None) -> Path:
    repos = workspaces(tmp_path, 2)
    lines = [{"id": f"task-{i:03d}", "prompt": f"prompt {i}", "workspace": str(repos[i % 2])} for i in range(n)]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in lines + (extra or [])))
    return path


def read_results(out: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def interrupt_when(out: Path, proc: "subprocess.Popen[bytes]", lines: int, sig: int) -> None:
    """Sends ``sig`` once ``out`` has at least ``lines`` results (polled; a hang guard only)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= lines:
            proc.send_signal(sig)
            return
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"the batch ended or stalled before {lines} results: rc={proc.poll()}")


def env() -> Dict[str, str]:
    e = dict(os.environ)
    e.pop("HARNESS_SESSION_ROOT", None)
    return e


def check_resumed(out: Path, n: int, first_run: List[Dict[str, Any]], tmp_path: Path) -> None:
    final = read_results(out)
    ids = [r["task_id"] for r in final]
    assert sorted(ids) == [f"task-{i:03d}" for i in range(n)], "every task answered exactly once"
    assert final[: len(first_run)] == first_run, "finished results are kept as they were, not redone"
    for r in final:
        assert r["status"] == "ok" and r["final_response"] == "finished", r
        assert_log_equals_result(tmp_path / "sessions", BatchResult.from_dict(r))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_batch_command_interrupted_then_resumed_does_not_redo_finished_tasks(tmp_path: Path, sig: int) -> None:
    n = 60
    # ~0.25 s a task: the 50 after the 10th take ~3 s, so the signal lands mid-batch even when a
    # busy machine holds this test's poller back (at 15 ms a chunk the batch had ended by then).
    write_script(tmp_path / "script.json", "finished", delay_ms=60, chunk=2)
    tasks, out = write_tasks(tmp_path, n), tmp_path / "results.jsonl"
    proc = subprocess.Popen(command(tmp_path, tasks, out, "--concurrency", "4"), env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    interrupt_when(out, proc, 10, sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), err.decode()
    first_run = read_results(out)
    assert 10 <= len(first_run) < n, "interrupted mid-batch"
    if sig == signal.SIGINT:
        assert b"run again to resume" in err

    again = subprocess.run(command(tmp_path, tasks, out, "--concurrency", "4"), env=env(),
                           capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode()
    assert f"{n} tasks, {len(first_run)} already in".encode() in again.stderr
    check_resumed(out, n, first_run, tmp_path)

    # A third run has nothing left to do.
    third = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=60)
    assert third.returncode == 0 and f"{n} already in".encode() in third.stderr
    assert len(read_results(out)) == n


def test_batch_command_reports_failed_tasks_and_exits_1(tmp_path: Path) -> None:
    write_script(tmp_path / "script.json", "finished")
    err_script = write_script(tmp_path / "err.json", error={"message": "bad request", "httpStatus": 400})
    tasks = write_tasks(tmp_path, 3, [
        {"id": "nowhere", "prompt": "x", "workspace": str(tmp_path / "missing")},
        {"id": "model-error", "prompt": "x", "workspace": str(tmp_path / "repo-0"), "options": {"model": str(err_script)}},
    ])
    out = tmp_path / "results.jsonl"
    run = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=120)
    assert run.returncode == 1, run.stderr.decode()
    by_id = {r["task_id"]: r for r in read_results(out)}
    assert len(by_id) == 5
    assert by_id["nowhere"]["error"]["type"] == "FileNotFoundError"
    assert by_id["model-error"]["reason"]["kind"] == "model-error"
    assert b"3 ok, 2 failed" in run.stderr


def test_a_resumed_batch_exits_1_while_its_earlier_results_hold_a_failure(tmp_path: Path) -> None:
    """The exit status is that of every task of the input in the results file: a run that only
    resumed (here: had nothing left to do) exited 0 over a file holding failures, so a CI job
    that ran the same command again after an interruption turned green."""
    write_script(tmp_path / "script.json", "finished")
    failing = {"id": "nowhere", "prompt": "x", "workspace": str(tmp_path / "missing")}
    tasks = write_tasks(tmp_path, 2, [failing])
    out = tmp_path / "results.jsonl"
    first = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=120)
    assert first.returncode == 1 and b"2 ok, 1 failed" in first.stderr, first.stderr.decode()

    again = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=60)
    assert again.returncode == 1, again.stderr.decode()
    assert f"ran 0: 0 ok, 0 failed; of the 3 earlier results in {out}, 1 failed".encode() in again.stderr

    # One more task, which succeeds: the earlier failure still counts.
    more = write_tasks(tmp_path, 3, [failing])
    resumed = subprocess.run(command(tmp_path, more, out), env=env(), capture_output=True, timeout=120)
    assert resumed.returncode == 1 and b"ran 1: 1 ok, 0 failed; of the 3 earlier results" in resumed.stderr

    # A failure of a task the input does not hold is not this batch's.
    only_ok = tmp_path / "ok-tasks.jsonl"
    only_ok.write_text("".join(line for line in more.read_text().splitlines(keepends=True) if "nowhere" not in line))
    clean = subprocess.run(command(tmp_path, only_ok, out), env=env(), capture_output=True, timeout=60)
    assert clean.returncode == 0 and b"of the 3 earlier results" in clean.stderr and b", 0 failed" in clean.stderr


@pytest.mark.parametrize("content,message", [
    ('{"prompt": "x"}\n', "tasks.jsonl:1: 'workspace' must be a non-empty string"),
    ('{"id": "a", "prompt": "x", "workspace": "/w"}\n{"id": "a", "prompt": "y", "workspace": "/w"}\n',
     "tasks.jsonl:2: task id 'a' is already the id of line 1"),
    ('not json\n', "tasks.jsonl:1: not JSON"),
    ('[1]\n', "tasks.jsonl:1: a task is a JSON object, not list"),
    ('{"prompt": "x", "workspace": "/w", "options": {"modle": "m"}}\n', "tasks.jsonl:1: unknown option(s) modle"),
    ('{"prompt": "x", "workspace": "/w", "promt": "m"}\n', "tasks.jsonl:1: unknown key(s) promt"),
], ids=["no-workspace", "duplicate-id", "not-json", "not-object", "unknown-option", "unknown-key"])
def test_batch_command_rejects_a_bad_tasks_file_before_running(tmp_path: Path, content: str, message: str) -> None:
    write_script(tmp_path / "script.json")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(content)
    out = tmp_path / "results.jsonl"
    run = subprocess.run(command(tmp_path, tasks, out), env=env(), capture_output=True, timeout=60)
    assert run.returncode == 2
    assert message in run.stderr.decode()
    assert not out.exists()


def test_the_package_and_the_local_batch_never_import_ray() -> None:
    code = ("import sys, deepseek_harness, deepseek_harness.batch, deepseek_harness.batch.__main__; "
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_iter_local_with_a_pool_of_the_callers_reuses_its_bridges_across_batches(tmp_path: Path) -> None:
    import asyncio

    from deepseek_harness.batch import HarnessPool, iter_local

    options = scripted_options(tmp_path, write_script(tmp_path / "s.json", "ok"))
    (ws,) = workspaces(tmp_path, 1)

    async def two_batches() -> Tuple[List[str], int, int]:
        async with HarnessPool(options) as pool:
            answers = []
            for batch in range(2):
                async for r in iter_local([BatchTask(f"{batch}-{i}", "x", ws) for i in range(5)], pool=pool):
                    answers.append(r.final_response)
                assert pool.open_bridges == 1  # still open for the next batch
            return answers, pool.bridges_started, pool.open_bridges

    answers, started, _ = call_within(60, asyncio.run, two_batches())
    assert answers == ["ok"] * 10 and started == 1


def bridge_children() -> List[int]:
    """Pids of this process's harness-bridge children (from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"--stdio" in cmdline:
            pids.append(int(entry))
    return pids


def test_a_bridge_that_dies_fails_its_turns_and_the_next_task_gets_a_new_one(tmp_path: Path) -> None:
    import asyncio

    from deepseek_harness.batch import HarnessPool

    options = scripted_options(tmp_path, write_script(tmp_path / "slow.json", "a slow answer", delay_ms=40, chunk=1))
    (ws,) = workspaces(tmp_path, 1)

    async def scenario() -> Tuple[BatchResult, BatchResult, int]:
        async with HarnessPool(options) as pool:
            first = asyncio.ensure_future(pool.run(BatchTask("killed", "x", ws)))
            while not bridge_children():
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)  # the turn is streaming
            (pid,) = bridge_children()
            os.kill(pid, signal.SIGKILL)
            killed = await first
            after = await pool.run(BatchTask("after", "x", ws))
            return killed, after, pool.bridges_started

    killed, after, started = call_within(60, asyncio.run, scenario())
    assert killed.status == "error" and killed.error["type"] == "TransportClosedError", killed
    assert after.ok and after.final_response == "a slow answer", after
    assert started == 2

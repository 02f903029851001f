"""Open files and VmRSS of one bridge after N sessions used once (20 in flight at a time), with
the session log on and off, against the same bridge after its first 20 sessions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Sequence, Tuple

from common import Context, Count, Result, bridge_env, initialize_request, mb, proc_status, prompt_request, write_script

COUNTS = {"sessions": Count(quick=500, full=10_000)}


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def sessions_run(ctx: Context, model: str, session_log: bool, sessions: int, marks: Sequence[int]) -> Dict[int, Tuple[int, int]]:
    """One bridge; one prompt for each of `sessions` new sessions, 20 in flight at a time; (fds, RSS kB) at each mark."""
    tmp = ctx.tmp
    args = [str(ctx.bin), "--stdio"] + ([] if session_log else ["--no-session-log"])
    root = Path(tempfile.mkdtemp(dir=tmp))
    proc = subprocess.Popen(args + (["--session-root", str(root)] if session_log else []), env=bridge_env(root),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize_request(str(tmp), model))
    proc.stdin.flush()
    proc.stdout.readline()
    seen: Dict[int, Tuple[int, int]] = {}
    done = 0
    batch = 20
    while done < sessions:
        ids = list(range(done + 2, done + 2 + min(batch, sessions - done)))
        proc.stdin.write(b"".join(prompt_request(i, f"s{i}") for i in ids))
        proc.stdin.flush()
        waiting = set(ids)
        while waiting:
            msg = json.loads(proc.stdout.readline())
            if "method" in msg:
                continue
            if "error" in msg or msg["result"]["status"] != "ok":
                raise RuntimeError(f"prompt failed: {msg}")
            waiting.discard(msg["id"])
        done += len(ids)
        for mark in marks:
            if done == mark:
                seen[mark] = (open_fds(proc.pid), proc_status(proc.pid)["VmRSS"])
    proc.stdin.close()
    proc.wait()
    shutil.rmtree(root, ignore_errors=True)
    return seen


def run(ctx: Context) -> Result:
    model = write_script(ctx.tmp, "session-turn.json", {"steps": [{"text": "hello"}]})
    n = ctx.count(COUNTS["sessions"])
    res = Result(f"Many sessions: open files and RSS after {n:,} sessions used once, against after the first 20",
                 ["session log", "fds at 20", f"fds at {n:,}", "RSS at 20", f"RSS at {n:,}", "RSS per session"])
    for log in (True, False):
        seen = sessions_run(ctx, model, log, n, [20, n])
        (fd0, rss0), (fd1, rss1) = seen[20], seen[n]
        per = (rss1 - rss0) * 1024 / (n - 20)
        res.row("on" if log else "off", fd0, fd1, mb(rss0), mb(rss1), f"{per:,.0f} B")
        if log:
            res.goal(f"open files after {n:,} logged sessions stay bounded (at most 20 more than after 20 sessions + 64 idle kept)",
                     f"{fd1} fds (after 20: {fd0})", fd1 <= fd0 + 64 + 20)
        else:
            res.goal(f"RSS per in-memory session, {n:,} sessions (informational)", f"{per:,.0f} B", None)
    res.notes.append("With the log on, only the sessions in flight and the 64 most recently used idle ones stay loaded "
                     "(IDLE_SESSIONS_KEPT in src/agent/runtime.ts); with --no-session-log nothing can be reloaded, "
                     "so every session's history stays in memory.")
    return res

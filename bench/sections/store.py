"""Events/s with the durable JSONL store on and off (--no-session-log), through a raw JSON-RPC
client so that the bridge's own cost shows."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from common import Context, Count, Result, bridge_env, initialize_request, median, prompt_request, write_script

COUNTS = {
    "prompts": Count(quick=20, full=500),
    "steps": Count(quick=20, full=1_000),
    "runs": Count(quick=1, full=3),
}


def raw_session(ctx: Context, model: str, session_log: bool, requests: Callable[[int], bytes], count: int, **init: Any) -> Tuple[int, float]:
    """Sends `count` prompts one after the other; returns (notifications, seconds)."""
    tmp = ctx.tmp
    args = [str(ctx.bin), "--stdio"] + ([] if session_log else ["--no-session-log"])
    root = Path(tempfile.mkdtemp(dir=tmp))
    env = bridge_env(root)
    proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize_request(str(tmp), model, **init))
    proc.stdin.flush()
    proc.stdout.readline()
    readline, loads = proc.stdout.readline, json.loads
    notifications = 0
    start = time.perf_counter()
    for i in range(count):
        proc.stdin.write(requests(i + 2))
        proc.stdin.flush()
        while True:
            msg = loads(readline())
            if "method" in msg:
                notifications += 1
            elif msg.get("id") == i + 2:
                if "error" in msg or msg["result"]["status"] != "ok":
                    raise RuntimeError(f"prompt failed: {msg}")
                break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    if session_log and not any(root.rglob("*.jsonl")):
        raise RuntimeError("the session log was on, but no log was written")
    shutil.rmtree(root, ignore_errors=True)
    return notifications, elapsed


def run(ctx: Context) -> Result:
    tmp, runs = ctx.tmp, ctx.count(COUNTS["runs"])
    prompts, steps_per_turn = ctx.count(COUNTS["prompts"]), ctx.count(COUNTS["steps"])
    (tmp / "notes.txt").write_text("a small file\n")
    one_chunk = write_script(tmp, "store-turn.json", {"steps": [{"text": "ok"}]})
    steps = write_script(tmp, "store-steps.json", {"steps": [
        *({"toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]} for _ in range(steps_per_turn)),
        {"text": "done"},
    ]})
    workloads: List[Tuple[str, Callable[[bool], Tuple[int, float]]]] = [
        (f"{prompts} one-step turns (an fsync each)",
         lambda log: raw_session(ctx, one_chunk, log, lambda rid: prompt_request(rid, "store"), prompts)),
        (f"1 turn of {steps_per_turn} tool-call steps (appends, one fsync)",
         lambda log: raw_session(ctx, steps, log, lambda rid: prompt_request(rid, "steps"), 1, maxSteps=steps_per_turn + 1)),
    ]
    res = Result(f"Durable log cost: events/s with the JSONL store on and off (median of {runs})",
                 ["workload", "log off events/s", "log on events/s", "on / off"])
    for name, fn in workloads:
        rates: Dict[bool, List[float]] = {False: [], True: []}
        for _ in range(runs):
            for log in (False, True):
                count, elapsed = fn(log)
                rates[log].append(count / elapsed)
        off, on = median(rates[False]), median(rates[True])
        res.row(name, f"{off:,.0f}", f"{on:,.0f}", f"{on / off:.2f}")
        res.goal(f"store cost, {name} (informational)", f"{on / off:.2f} of the rate without the log", None)
    res.notes.append("Raw JSON-RPC client (no SDK) so that the bridge's own cost shows; durable events are appended "
                     "(writeSync) before they are announced, and the log is fsynced at each turn end.")
    return res

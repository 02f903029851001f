"""A scripted turn of N chunks read through the SDK's on_notification, against the floor: a Node
writer of the same NDJSON lines to a raw Python json.loads reader."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from typing import Any, Callable, Dict, List, Tuple

from common import BENCH, REPO, Context, Count, Result, initialize_request, median, prompt_request

COUNTS = {"chunks": Count(quick=5_000, full=200_000), "runs": Count(quick=1, full=5)}


def load_notifications_bench() -> Any:
    """python/sdk/scripts/bench_notifications.py: its raw reader and SDK reader are reused here."""
    path = REPO / "python" / "sdk" / "scripts" / "bench_notifications.py"
    spec = importlib.util.spec_from_file_location("bench_notifications", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESPONSE = b'\n{"jsonrpc":"2.0","id":2,'


def lines_run(cmd: List[str], model: str, cwd: str) -> Tuple[int, float]:
    """A reader that only counts lines (os.read of 1 MiB, bytes.count), so the writer's rate
    shows, not a Python parser's: (notifications, seconds) from the prompt to its response, the
    last line either writes before the next request."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize_request(cwd, model))
    proc.stdin.flush()
    proc.stdout.readline()
    fd = proc.stdout.fileno()
    start = time.perf_counter()
    proc.stdin.write(prompt_request(2, "bench", "go"))
    proc.stdin.flush()
    lines = 0
    tail = b"\n"
    answered = False
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            raise RuntimeError(f"{cmd[0]}: closed its stdout before the response")
        lines += block.count(b"\n")
        answered = answered or RESPONSE in tail + block
        if answered and block.endswith(b"\n"):
            break
        tail = block[-len(RESPONSE):]
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.kill()
    proc.wait()
    return lines - 1, elapsed


def run(ctx: Context) -> Result:
    n, runs, tmp = ctx.count(COUNTS["chunks"]), ctx.count(COUNTS["runs"]), ctx.tmp
    bn = load_notifications_bench()
    model = bn.model("real", n, tmp)  # one step: "0123456789abcdef" x n, 16 characters a chunk
    bridge = [str(ctx.bin), "--stdio", "--no-session-log"]
    floor = [ctx.node, str(BENCH / "floor_writer.mjs"), "--chunks", str(n)]
    cases: List[Tuple[str, Callable[[], Tuple[int, float]]]] = [
        ("floor: Node writer -> raw Python reader (json.loads)", lambda: bn.raw_run(floor, model, str(tmp))),
        ("floor: Node writer -> line counter (os.read, no parse)", lambda: lines_run(floor, model, str(tmp))),
        ("bridge -> line counter (os.read, no parse)", lambda: lines_run(bridge, model, str(tmp))),
        ("bridge -> raw Python reader (json.loads)", lambda: bn.raw_run(bridge, model, str(tmp))),
        ("bridge -> SDK on_notification", lambda: bn.sdk_run(bridge, model, str(tmp))),
        ("Node writer -> SDK on_notification (the SDK's own ceiling)", lambda: bn.sdk_run(floor, model, str(tmp))),
        ("bridge -> DeepSeekHarness.run, no callback (the result keeps every notification)", lambda: bn.result_run(bridge, model, str(tmp))),
    ]
    rates: Dict[str, List[float]] = {name: [] for name, _ in cases}
    for _ in range(runs):
        for name, fn in cases:
            count, elapsed = fn()
            if count < n:
                raise RuntimeError(f"{name}: {count} notifications, expected at least {n}")
            rates[name].append(count / elapsed)
    res = Result(f"Event throughput: one turn of {n:,} chunks (median of {runs})", ["path", "events/s", "ratio vs floor"])
    base = median(rates[cases[0][0]])
    for name, _ in cases:
        res.row(name, f"{median(rates[name]):,.0f}", f"{median(rates[name]) / base:.2f}")
    ratio = median(rates[cases[4][0]]) / base
    res.goal("throughput: SDK >= 0.70 of the floor", f"{ratio:.2f}", ratio >= 0.70)
    raw = median(rates[cases[3][0]]) / base
    res.goal("throughput: bridge -> raw reader >= 0.85 of the Node writer floor", f"{raw:.2f}", raw >= 0.85)
    writer = median(rates[cases[2][0]]) / median(rates[cases[1][0]])
    res.goal("throughput: bridge / Node writer, line counter (informational)", f"{writer:.2f}", None)
    res.notes.append("The line counter parses nothing, so its two rows are the writers' own rates: CPU-bound, they compare "
                     "what the bridge does per chunk (the agent loop, the event, its frame) with a bare JSON.stringify. "
                     "The json.loads rows are what a client that reads the events gets: its parser is the bottleneck.")
    res.notes.append("Readers and the prompt are python/sdk/scripts/bench_notifications.py's (raw_run, sdk_run, result_run). "
                     "The Node writer -> SDK row feeds the SDK the floor's stream: the most the SDK can reach on this machine, whatever the bridge does.")
    res.notes.append("DeepSeekHarness.run without a callback keeps every notification in its TurnResult; the chunks among them stay "
                     "undecoded until read (4 dicts each, traversed by every full collection of Python's cyclic GC, would halve the rate).")
    return res

"""spawn -> the first prompt response of a session whose log holds N events (1k, 10k, 100k, 1M;
a realistic mix: user messages, tool-call steps, tool results), against a Node process reading
the same file raw (bytes only) and reading it and JSON-parsing every line; and a new session (no
log) for the fixed cost. Then the same log once compacted at its end: the resume must not depend
on what came before. Why the goal is against read + parse: bench/README.md, "Resume"."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

from common import Context, Count, Result, median
from session_logs import append_compaction, log_folder, read_until, request, write_log

COUNTS = {
    # The logs: 1 000 events, then ten times more each, up to this many.
    "largest_log": Count(quick=10_000, full=1_000_000),
    "new_session_runs": Count(quick=3, full=7),
    "runs": Count(quick=1, full=5),
    "runs_from_1m": Count(quick=1, full=3),  # a 1M-event log takes seconds a run
}

NODE_READ = "require('fs').readFileSync(process.argv[1])"
NODE_READ_PARSE = ("const t=require('fs').readFileSync(process.argv[1],'utf8');let n=0;"
                   "for(const l of t.split('\\n'))if(l)n+=JSON.parse(l).seq>0?1:0")


def spawn_to_first_response(bin_path: Path, root: Path, workspace: Path, session_id: str) -> float:
    """spawn -> initialize and a prompt of `session_id`, written at once -> the prompt's response."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(bin_path), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin
    proc.stdin.write(request(1, "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "turn.json"})
                     + request(2, "session/prompt", {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": "go"}]}))
    proc.stdin.flush()
    answer = read_until(proc, 2)
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    if answer["result"]["status"] != "ok":
        raise RuntimeError(f"resume failed: {answer}")
    return elapsed


def node_run(node: str, code: str, arg: str) -> float:
    """The baseline's time: `code` run by `node` (the pinned Node, the bridge's own runtime)."""
    start = time.perf_counter()
    subprocess.run([node, "-e", code, arg], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def run(ctx: Context) -> Result:
    tmp, bin_path = ctx.tmp, ctx.bin
    largest = ctx.count(COUNTS["largest_log"])
    sizes = [1_000]
    while sizes[-1] < largest:
        sizes.append(sizes[-1] * 10)
    workspace, root, folder = log_folder(bin_path, tmp, "resume")
    res = Result("Resume: spawn -> first prompt response of a session with N logged events (median)",
                     ["events", "log MB", "raw read ms", "read+parse ms", "resume ms", "vs raw read", "vs read+parse", "µs/event",
                      "after a compaction ms"])
    spawn_to_first_response(bin_path, root, workspace, "fresh-warm-up")
    fresh = [spawn_to_first_response(bin_path, root, workspace, f"fresh{i}") for i in range(ctx.count(COUNTS["new_session_runs"]))]
    base = median(fresh)
    res.row("0 (new session)", "0", "", "", f"{base * 1000:.0f}", "", "", "", "")
    compacted: Dict[int, float] = {}
    marginal: Dict[int, float] = {}
    ratios: Dict[int, Tuple[float, float]] = {}
    for n in sizes:
        log = folder / f"n{n}.jsonl"
        size = write_log(log, f"n{n}", n)
        runs = ctx.count(COUNTS["runs_from_1m"] if n >= 1_000_000 else COUNTS["runs"])
        times: Dict[str, List[float]] = {"raw": [], "parse": [], "resume": []}
        # One warm-up of each (the page cache), then interleaved runs. Each resume appends its
        # turn (7 events) to the log: negligible beside N.
        node_run(ctx.node, NODE_READ, str(log))
        spawn_to_first_response(bin_path, root, workspace, f"n{n}")
        for _ in range(runs):
            times["raw"].append(node_run(ctx.node, NODE_READ, str(log)))
            times["parse"].append(node_run(ctx.node, NODE_READ_PARSE, str(log)))
            times["resume"].append(spawn_to_first_response(bin_path, root, workspace, f"n{n}"))
        raw, parse, resume = (median(times[k]) for k in ("raw", "parse", "resume"))
        # The same log once compacted at its end: the resume reads only the kept history.
        append_compaction(log)
        spawn_to_first_response(bin_path, root, workspace, f"n{n}")
        compacted[n] = median([spawn_to_first_response(bin_path, root, workspace, f"n{n}") for _ in range(runs)])
        marginal[n] = (resume - base) / n
        ratios[n] = (resume / raw, resume / parse)
        res.row(f"{n:,}", f"{size / 1e6:.1f}", f"{raw * 1000:.0f}", f"{parse * 1000:.0f}", f"{resume * 1000:.0f}",
                f"{resume / raw:.2f}x", f"{resume / parse:.2f}x", f"{marginal[n] * 1e6:.2f}", f"{compacted[n] * 1000:.0f}")
        log.unlink()
    top, below = sizes[-1], sizes[-2]
    res.goal(f"resume of {top:,} events within 3x a raw read + JSON.parse of every line (node)", f"{ratios[top][1]:.2f}x", ratios[top][1] <= 3)
    res.goal(f"resume of {top:,} events against a bytes-only read (informational)", f"{ratios[top][0]:.2f}x", None)
    growth = marginal[top] / marginal[below]
    res.goal(f"resume is linear: cost per event at {top:,} within 1.5x of that at {below:,}", f"{growth:.2f}x", growth <= 1.5)
    after = compacted[top] / base
    res.goal(f"resume of {top:,} events after a compaction within 1.5x of a new session (independent of the history before it)",
             f"{after:.2f}x", after <= 1.5)
    res.notes.append("resume = spawn, initialize and a prompt written at once, until the prompt's response (scripted model); "
                     "raw read = `node -e readFileSync(file)` spawn -> exit; read+parse = the same plus JSON.parse of every line. "
                     "µs/event = (resume - new session) / N.")
    res.notes.append("Resuming must parse every event of the history the model is sent, so its floor is the read+parse "
                     "column. After a compaction only the header, the kept history and what follows are read "
                     "(src/agent/store/resume.ts): 'after a compaction' is the same log with a context/compacted "
                     "appended that keeps the history from its last assistant message on.")
    return res

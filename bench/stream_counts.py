#!/usr/bin/env python3
"""What the reader of a streamed turn sees, counted rather than timed: the throughput section's
`json.loads` reader (python/sdk/scripts/bench_notifications.py's `raw_run` loop) reading one
scripted turn of N chunks from the bridge and from the Node writer floor (bench/floor_writer.mjs),
interleaved, with each side's counters read from /proc between the prompt and its response.

    python3 bench/stream_counts.py [--bin PATH] [--chunks 200000] [--rounds 5]
        [--pipe-size BYTES] [--pin WRITER_CPU:READER_CPU] [--json]

Per writer, medians over the rounds:

* writer: write(2) calls (`syscw` of /proc/PID/io, every thread) and bytes per call, the main
  thread's voluntary switches (each is a wait: for room in the pipe, or for input), its run and
  run-queue time (/proc/PID/task/PID/schedstat), the process's CPU per line (utime + stime);
* the time from the prompt to the first chunk's line (the floor starts streaming at once; the
  bridge's first prompt first loads its agent half and opens the session);
* reader: read(2) calls and bytes read, voluntary switches (a read that found the pipe empty),
  involuntary ones (preempted: on 2 cores mostly by the writer, woken on the reader's CPU when a
  read frees room in a full pipe), and its time split into running, waiting for a CPU, and
  blocked on an empty pipe (the rest of the wall time).

The counts do not depend on the machine's load the way lines/s do, so they can be compared
across runs on a busy machine. `--pipe-size` sets the pipe's capacity from the reader's end
(F_SETPIPE_SZ; either end of a pipe may): a capacity that covers the writer's stalls shows how
much of the gap they are. `--pin` puts the writer and the reader on fixed CPUs (taskset).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from common import DEFAULT_BIN, REPO, initialize_request, pinned_node, prompt_request

F_SETPIPE_SZ = 1031
TICK = os.sysconf("SC_CLK_TCK")


def proc_io(pid: str) -> Dict[str, int]:
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(":") for line in f)}


def sched(path: str) -> Tuple[float, float]:
    """(seconds running, seconds runnable but waiting for a CPU) of one thread."""
    with open(path) as f:
        run_ns, wait_ns, _ = map(int, f.read().split())
    return run_ns / 1e9, wait_ns / 1e9


def writer_state(pid: int) -> Dict[str, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open(f"/proc/{pid}/status") as f:
        status = {k: int(v) for k, v in (line.split(":") for line in f if "ctxt_switches" in line)}
    io = proc_io(str(pid))
    run, wait = sched(f"/proc/{pid}/task/{pid}/schedstat")
    return {"cpu": (int(fields[11]) + int(fields[12])) / TICK, "writes": io["syscw"], "wbytes": io["wchar"],
            "vol": status["voluntary_ctxt_switches"], "run": run, "wait": wait}


def reader_state() -> Dict[str, float]:
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    io = proc_io("thread-self")
    run, wait = sched("/proc/thread-self/schedstat")
    return {"reads": io["syscr"], "rbytes": io["rchar"], "vol": usage.ru_nvcsw, "invol": usage.ru_nivcsw, "run": run, "wait": wait}


def one_turn(cmd: List[str], model: str, cwd: str, pipe_size: Optional[int], pin: Optional[Tuple[int, int]]) -> Dict[str, float]:
    if pin:
        cmd = ["taskset", "-c", str(pin[0])] + cmd
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    if pin:
        os.sched_setaffinity(0, {pin[1]})
    if pipe_size:
        import fcntl

        fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, pipe_size)
    try:
        proc.stdin.write(initialize_request(cwd, model))
        proc.stdin.flush()
        readline, loads = proc.stdout.readline, json.loads
        loads(readline())
        w0, r0 = writer_state(proc.pid), reader_state()
        start = time.perf_counter()
        proc.stdin.write(prompt_request(2, "bench", "go"))
        proc.stdin.flush()
        lines, first = 0, 0.0
        while True:  # raw_run's loop, and the time of the first chunk
            raw = readline()
            if not first and b'"assistant/chunk"' in raw:
                first = time.perf_counter() - start
            msg = loads(raw)
            if "method" in msg:
                lines += 1
            elif msg.get("id") == 2:
                break
        elapsed = time.perf_counter() - start
        w1, r1 = writer_state(proc.pid), reader_state()
    finally:
        if pin:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        proc.stdin.close()
        proc.kill()
        proc.wait()
    w = {k: w1[k] - w0[k] for k in w0}
    r = {k: r1[k] - r0[k] for k in r0}
    return {
        "lines/s": lines / elapsed,
        "prompt to first chunk ms": first * 1e3,
        "writer CPU µs/line": w["cpu"] / lines * 1e6,
        "writer write(2)": w["writes"],
        "writer bytes/write": w["wbytes"] / max(w["writes"], 1),
        "writer waits (voluntary switches)": w["vol"],
        "writer main thread run ms": w["run"] * 1e3,
        "writer main thread run-queue ms": w["wait"] * 1e3,
        "reader read(2)": r["reads"],
        "reader bytes": r["rbytes"],
        "reader blocks on an empty pipe (voluntary)": r["vol"],
        "reader preempted (involuntary)": r["invol"],
        "reader run ms": r["run"] * 1e3,
        "reader run-queue ms": r["wait"] * 1e3,
        "reader blocked ms": (elapsed - r["run"] - r["wait"]) * 1e3,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=str(DEFAULT_BIN))
    ap.add_argument("--chunks", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pipe-size", type=int, default=0)
    ap.add_argument("--pin", default="", help="WRITER_CPU:READER_CPU")
    ap.add_argument("--json", action="store_true", help="print every run as a JSON line too")
    args = ap.parse_args()
    pin = tuple(int(c) for c in args.pin.split(":")) if args.pin else None
    with tempfile.TemporaryDirectory(prefix="stream-counts-") as tmp:
        model = Path(tmp) / "bench.json"  # bench_notifications.model("real", ...): one step of N 16-character chunks
        model.write_text(json.dumps({"steps": [{"text": "0123456789abcdef", "chunkSize": 16, "repeat": args.chunks}]}))
        writers = {
            "floor": [pinned_node(), str(REPO / "bench" / "floor_writer.mjs"), "--chunks", str(args.chunks)],
            "bridge": [args.bin, "--stdio", "--no-session-log"],
        }
        runs: Dict[str, List[Dict[str, float]]] = {name: [] for name in writers}
        for _ in range(args.rounds):
            for name, cmd in writers.items():
                run = one_turn(cmd, str(model), tmp, args.pipe_size or None, pin)  # type: ignore[arg-type]
                runs[name].append(run)
                if args.json:
                    print(json.dumps({"writer": name, **{k: round(v, 2) for k, v in run.items()}}), flush=True)
    keys = list(runs["floor"][0])
    print(f"| median of {args.rounds}, {args.chunks:,} chunks, pipe {args.pipe_size or 'default'}, pin {args.pin or 'none'} | floor | bridge |")
    print("|---|---|---|")
    for key in keys:
        a, b = (statistics.median(r[key] for r in runs[name]) for name in ("floor", "bridge"))
        form = ",.2f" if "µs" in key else ",.0f"
        print(f"| {key} | {a:{form}} | {b:{form}} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

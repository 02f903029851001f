"""`session/list` over N sessions, inside a running bridge: the first listing (no meta files:
each log is scanned, metas written) and later ones (meta files), against a Node process's
readdir + stat of the same folder (timed inside that process)."""

from __future__ import annotations

import subprocess
import time
from typing import List

from common import Context, Count, Result, median
from session_logs import TIME0, log_folder, read_until, request, write_log

COUNTS = {"sessions": Count(quick=500, full=10_000), "runs": Count(quick=1, full=5)}

NODE_READDIR_STAT = ("const fs=require('fs'),p=require('path'),d=process.argv[1];const t=process.hrtime.bigint();"
                     "let n=0;for(const f of fs.readdirSync(d))n+=fs.statSync(p.join(d,f)).size>0?1:0;"
                     "console.log(Number(process.hrtime.bigint()-t)/1e9)")


def run(ctx: Context) -> Result:
    tmp, bin_path = ctx.tmp, ctx.bin
    n, runs = ctx.count(COUNTS["sessions"]), ctx.count(COUNTS["runs"])
    workspace, root, folder = log_folder(bin_path, tmp, "list")
    for i in range(n):
        write_log(folder / f"s{i}.jsonl", f"s{i}", 11, TIME0 + i * 1000)
    res = Result(f"session/list over {n:,} sessions, in a running bridge (median of {runs})",
                     ["listing", "ms", f"vs readdir+stat of the folder"])
    proc = subprocess.Popen([str(bin_path), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin
    rid = 1
    proc.stdin.write(request(rid, "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "turn.json"}))
    proc.stdin.flush()
    read_until(proc, rid)

    def listing() -> float:
        nonlocal rid
        rid += 1
        start = time.perf_counter()
        proc.stdin.write(request(rid, "session/list", {}))  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        answer = read_until(proc, rid)
        elapsed = time.perf_counter() - start
        if len(answer["result"]["sessions"]) != n:
            raise RuntimeError(f"session/list gave {len(answer['result']['sessions'])} sessions, not {n}")
        return elapsed

    def readdir_stat() -> float:
        out = subprocess.run([ctx.node, "-e", NODE_READDIR_STAT, str(folder)], check=True, capture_output=True, text=True).stdout
        return float(out.strip())

    cold: List[float] = []
    warm: List[float] = []
    base: List[float] = []
    for _ in range(runs):
        for meta in folder.glob("*.meta.json"):
            meta.unlink()
        base.append(readdir_stat())
        cold.append(listing())  # scans every log, writes the meta files
        warm.append(listing())
    proc.stdin.close()
    proc.wait()
    b = median(base)
    for label, xs in (("first (no meta files: every log scanned, metas written)", cold), ("later (meta files)", warm)):
        m = median(xs)
        res.row(label, f"{m * 1000:.1f}", f"{m / b:.2f}x")
    res.row("node readdir + stat of the folder (in process)", f"{b * 1000:.1f}", "1.00x")
    ratio = median(warm) / b
    res.goal(f"session/list of {n:,} sessions within 5x a readdir + stat of their folder", f"{ratio:.2f}x, {median(warm) * 1000:.0f} ms", ratio <= 5)
    res.goal(f"session/list of {n:,} sessions without meta files (informational)", f"{median(cold) / b:.2f}x, {median(cold) * 1000:.0f} ms", None)
    res.notes.append("Each session: a header and one 11-event turn. The bridge's time is request written -> response read "
                     "(JSON of the whole answer included); the folder holds the logs and, after the first listing, a meta file each.")
    return res

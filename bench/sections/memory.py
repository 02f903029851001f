"""N events to a reader 10x slower than the bridge writes: bridge VmRSS at 10%, 50%, 90% and
100% of N, and VmHWM, against the RSS of the idle initialized bridge; as many turns and as one
turn (one message). What "not growing" means: bench/README.md, "Memory"."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from common import Context, Count, Result, bridge_env, initialize_request, mb, proc_status, prompt_request, write_script

COUNTS = {"events": Count(quick=10_000, full=1_000_000)}


def slow_reader(proc: "subprocess.Popen[bytes]", prompts: int, rate: Optional[float],
                marks: Sequence[int], on_mark: Callable[[int], None]) -> Tuple[int, float]:
    """Sends `prompts` prompts one after the other (the next when the previous one's response
    arrives) and reads the bridge's stdout at most `rate` lines/s (None: as fast as it can),
    counting notifications. Calls on_mark(n) when the count first reaches each mark.
    Returns (notifications, seconds)."""
    assert proc.stdin and proc.stdout
    fd = proc.stdout.fileno()
    pending = list(marks)
    notifications = 0
    lines = 0
    carry = b""
    sent = 1
    proc.stdin.write(prompt_request(2, "memory"))
    proc.stdin.flush()
    start = time.perf_counter()
    while True:
        block = os.read(fd, 1 << 16)
        if not block:
            raise RuntimeError(f"the bridge closed stdout after {lines} lines")
        parts = (carry + block).split(b"\n")
        carry = parts.pop()
        for frame in parts:
            lines += 1
            if frame.startswith(b'{"jsonrpc":"2.0","method"'):
                notifications += 1
                if pending and notifications >= pending[0]:
                    on_mark(pending.pop(0))
            elif frame.startswith(b'{"jsonrpc":"2.0","id":'):
                if b'"result":{"status":"ok"' not in frame:
                    raise RuntimeError(f"prompt failed: {frame[:300]!r}")
                if sent == prompts:
                    return notifications, time.perf_counter() - start
                sent += 1
                proc.stdin.write(prompt_request(sent + 1, "memory"))
                proc.stdin.flush()
        if rate:
            ahead = lines / rate - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)


def memory_run(ctx: Context, turns: int, chunks_per_turn: int, rate: Optional[float],
               marks: Sequence[int]) -> Dict[str, Any]:
    """One bridge, `turns` prompts of `chunks_per_turn` chunks each, read at `rate`; VmRSS/VmHWM at the marks."""
    tmp = ctx.tmp
    model = write_script(tmp, f"memory-{chunks_per_turn}.json", {"steps": [{"text": "0123456789abcdef", "chunkSize": 16, "repeat": chunks_per_turn}]})
    proc = subprocess.Popen([str(ctx.bin), "--stdio", "--no-session-log"], env=bridge_env(tmp),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize_request(str(tmp), model))
    proc.stdin.flush()
    proc.stdout.readline()
    time.sleep(0.3)  # the agent modules load right after the initialize response
    samples: Dict[Any, Dict[str, int]] = {"idle": proc_status(proc.pid)}
    count, elapsed = slow_reader(proc, turns, rate, marks, lambda mark: samples.__setitem__(mark, proc_status(proc.pid)))
    samples["end"] = proc_status(proc.pid)
    proc.stdin.close()
    proc.wait()
    return {"samples": samples, "rate": count / elapsed, "count": count}


def run(ctx: Context) -> Result:
    n = ctx.count(COUNTS["events"])
    marks = [n // 10, n // 2, n * 9 // 10, n]
    # The writer's own pace, with a reader that only counts lines.
    calibration = memory_run(ctx, 1, max(n // 10, 5_000), None, [])
    slow = calibration["rate"] / 10
    # Many turns: what backpressure alone does. One turn: the same events, all one message.
    per_turn = max(n // 100, 100)
    message_bytes = 16 * n
    workloads = [
        (f"{n // per_turn} turns of {per_turn:,} chunks", memory_run(ctx, n // per_turn, per_turn, slow, marks), None),
        (f"1 turn of {n:,} chunks (one {message_bytes / 1048576:.1f} MB message)", memory_run(ctx, 1, n, slow, marks), message_bytes),
    ]
    first, streaming, last = marks[0], marks[-2], marks[-1]
    res = Result(f"Memory under a slow reader: {n:,} events, read at 1/10 of the bridge's pace",
                 ["workload", "idle RSS", *(f"RSS at {m:,}" for m in marks), "peak (VmHWM)",
                  f"growth per event, {first:,} -> {streaming:,}", f"growth per event, {first:,} -> {last:,}", "peak / idle"])
    for name, run, message in workloads:
        s = run["samples"]
        idle = s["idle"]["VmRSS"]
        rss = dict((m, s.get(m, {}).get("VmRSS", 0)) for m in marks)
        peak = s["end"]["VmHWM"]
        per_event = (rss[streaming] - rss[first]) * 1024 / max(streaming - first, 1)
        per_event_all = (rss[last] - rss[first]) * 1024 / max(last - first, 1)
        res.row(name, mb(idle), *(mb(rss[m]) for m in marks), mb(peak), f"{per_event:.0f} B", f"{per_event_all:.0f} B", f"{peak / idle:.2f}x")
        res.goal(f"memory, {name}: peak RSS <= 150 MB", mb(peak), peak <= 150 * 1024)
        # "Not growing": what RSS gains per event while the events stream. What a turn keeps is
        # its text (the history, the message being assembled: 16 bytes an event); a frame held for
        # want of backpressure would be ~250 bytes. Allowed: twice the text.
        res.goal(f"memory, {name}: RSS growth per event while streaming <= 32 B ({first:,} -> {streaming:,})", f"{per_event:.0f} B/event", per_event <= 32)
        if message:
            # The last tenth ends with the whole message: its final assistant/message event. Its
            # cost is the message, not the event count, so it is shown against the message's size.
            final = (rss[last] - rss[streaming]) * 1024 - (last - streaming) * per_event
            res.goal(f"memory, {name}: the final message's cost (RSS at {last:,} beyond the streaming trend, informational)",
                     f"{final / 1048576:.1f} MB, {final / message:.2f}x the message", None)
        res.notes.append(f"{name}: reader pace {run['rate']:,.0f} events/s.")
    res.notes.append(f"The bridge's own pace (reader counting lines only): {calibration['rate']:,.0f} events/s; the slow reader is held to 1/10 of it.")
    res.notes.append("A frame is ~250 bytes: without backpressure, RSS would grow by about that much per event. What a turn "
                     "keeps is its text (16 bytes an event: the session history, the message being assembled), which the "
                     "contract requires: the final assistant/message carries the whole text, and the history keeps it. "
                     "The growth goal is therefore taken while the events stream (10% -> 90%); the column to 100% is shown too.")
    res.notes.append("In one turn, the last sample and the peak also hold the end of the message: its text is joined into one "
                     "string while its streamed pieces are still in the heap (about 1x the message, until V8 collects them). "
                     "The final frame itself is encoded 64 KiB at a time as the pipe drains (src/json-line.ts, "
                     "src/transport/server-endpoint.ts), so it adds no copy of the message.")
    return res

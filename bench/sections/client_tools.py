"""A scripted turn calling a Python client tool (@tool: model -> bridge -> Python -> bridge): p50
of the call (assistant/message -> tool/result as the SDK sees them) and of the turn, against the
same turn calling the built-in read_file."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Tuple

from common import Context, Count, Result, median, percentile, write_script
from deepseek_harness import DeepSeekHarness, tool

COUNTS = {"turns": Count(quick=30, full=1_000), "rounds": Count(quick=1, full=5), "warmup": Count(quick=5, full=50)}


@tool(read_only=True)
def bench_echo(path: str) -> str:
    """Returns the text it is given."""
    return "hi"


def tool_turn_latencies(ctx: Context, n: int, warmup: int, client: bool) -> Tuple[List[float], List[float]]:
    """(call, turn) latencies of n turns of one session, each one tool call then a text: the call
    from its assistant/message to its tool/result as the SDK's callback sees them, the turn
    from run() to its return."""
    tmp = ctx.tmp
    name = "bench_echo" if client else "read_file"
    (tmp / "hi.txt").write_text("hi")
    model = write_script(tmp, f"{name}-call.json", {"steps": [
        {"text": "", "toolCalls": [{"id": "c1", "name": name, "arguments": {"path": "hi.txt"}}]}, {"text": "done"}]})
    harness = DeepSeekHarness(provider="scripted", model=model, cwd=str(tmp), bridge_bin=ctx.bin,
                              tools=[bench_echo] if client else None)
    harness.client.extra_args = ["--no-session-log"]
    marks: Dict[str, float] = {}
    clock = time.perf_counter

    def on_notification(n: Any) -> None:
        if n.method == "session.event":
            kind = n.payload["event"]["type"]
            if kind == "assistant/message" and "call" not in marks:
                marks["call"] = clock()
            elif kind == "tool/result":
                marks["result"] = clock()

    calls: List[float] = []
    turns: List[float] = []
    with harness:
        session = harness.start_session()
        for i in range(warmup + n):
            marks.clear()
            start = clock()
            result = session.run("go", on_notification)
            elapsed = clock() - start
            if i >= warmup:
                calls.append(marks["result"] - marks["call"])
                turns.append(elapsed)
        tool_result = next(ev for ev in result.events if ev.type == "tool/result")
        if not result.ok or tool_result.data["isError"]:
            raise RuntimeError(f"unexpected turn result: {result.status} {tool_result.data}")
    return calls, turns


def run(ctx: Context) -> Result:
    n, warmup, rounds = ctx.count(COUNTS["turns"]), ctx.count(COUNTS["warmup"]), ctx.count(COUNTS["rounds"])
    sides = {"built-in read_file": False, "client tool (@tool, sync, worker pool)": True}
    samples: Dict[str, List[Tuple[List[float], List[float]]]] = {name: [] for name in sides}
    for _ in range(rounds):  # interleaved rounds
        for name, client in sides.items():
            samples[name].append(tool_turn_latencies(ctx, n, warmup, client))
    res = Result(f"Client tool round trip: {n:,} turns of one tool call each (median over {rounds} rounds)",
                 ["tool", "call p50 ms", "call p99 ms", "turn p50 ms", "call p50 vs read_file", "turn p50 vs read_file"])
    stats = {name: (median([percentile(c, 50) for c, _ in runs]), median([percentile(c, 99) for c, _ in runs]),
                    median([percentile(t, 50) for _, t in runs])) for name, runs in samples.items()}
    base_call, _, base_turn = stats["built-in read_file"]
    for name, (call50, call99, turn50) in stats.items():
        res.row(name, f"{call50 * 1000:.3f}", f"{call99 * 1000:.3f}", f"{turn50 * 1000:.3f}",
                f"{call50 / base_call:.2f}x", f"{turn50 / base_turn:.2f}x")
    call50, _, turn50 = stats["client tool (@tool, sync, worker pool)"]
    res.goal("client tool call: p50 vs a built-in read_file call", f"{call50 / base_call:.2f}x", call50 / base_call <= 2.0)
    res.goal("client tool turn: p50 vs a read_file turn (informational)", f"{turn50 / base_turn:.2f}x", None)
    res.notes.append("The call: from the step's assistant/message to the call's tool/result, both as the SDK's on_notification "
                     "receives them; for the client tool that spans tool/request, the SDK's reader handing it to the worker "
                     "pool, the function, the session/tool_result request and its response. --no-session-log on both sides.")
    res.notes.append("The call's start is when the consumer thread sees assistant/message; the reader hands the client tool's "
                     "tool/request to the pool before that, so part of the pool's work can fall before the start mark. "
                     "The turn p50 has no such overlap.")
    return res

"""N sequential one-chunk prompts through the SDK (p50/p99), against a raw NDJSON echo (Node)
driven by a raw Python reader/writer, and an MCP tool call doing the same
(@modelcontextprotocol/sdk stdio server, `mcp` Python client)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Callable, Dict, List, Tuple

from common import (BENCH, REPO, Context, Count, Result, bridge_env, initialize_request, mcp_available, median,
                    percentile, prompt_request, write_script)
from deepseek_harness import DeepSeekHarness

COUNTS = {
    "prompts": Count(quick=50, full=1_000),
    "rounds": Count(quick=1, full=5),
    "warmup": Count(quick=5, full=50),
    # The steady-state rows: V8 has compiled the turn's code by then.
    "steady_warmup": Count(quick=10, full=3_000),
}


def raw_echo_latencies(ctx: Context, n: int, warmup: int) -> List[float]:
    proc = subprocess.Popen([ctx.node, str(BENCH / "echo_server.mjs")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    write, flush, readline, loads = proc.stdin.write, proc.stdin.flush, proc.stdout.readline, json.loads
    lat: List[float] = []
    for i in range(warmup + n):
        start = time.perf_counter()
        write(prompt_request(i, "bench", "hi"))
        flush()
        msg = loads(readline())
        elapsed = time.perf_counter() - start
        assert msg["id"] == i
        if i >= warmup:
            lat.append(elapsed)
    proc.stdin.close()
    proc.wait()
    return lat


def raw_bridge_latencies(ctx: Context, n: int, warmup: int, model: str) -> List[float]:
    tmp = ctx.tmp
    proc = subprocess.Popen([str(ctx.bin), "--stdio", "--no-session-log"], env=bridge_env(tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize_request(str(tmp), model))
    proc.stdin.flush()
    proc.stdout.readline()
    write, flush, readline, loads = proc.stdin.write, proc.stdin.flush, proc.stdout.readline, json.loads
    lat: List[float] = []
    for i in range(warmup + n):
        start = time.perf_counter()
        write(prompt_request(i + 2, "bench", "hi"))
        flush()
        while True:
            msg = loads(readline())
            if msg.get("id") == i + 2:
                break
        if i >= warmup:
            lat.append(time.perf_counter() - start)
    proc.stdin.close()
    proc.wait()
    return lat


def sdk_latencies(ctx: Context, n: int, warmup: int, model: str, session_log: bool) -> List[float]:
    tmp = ctx.tmp
    harness = DeepSeekHarness(provider="scripted", model=model, cwd=str(tmp), session_root=str(tmp / "sessions"), bridge_bin=ctx.bin)
    if not session_log:
        harness.client.extra_args = ["--no-session-log"]
    lat: List[float] = []
    with harness:
        session = harness.start_session()
        for i in range(warmup + n):
            start = time.perf_counter()
            result = session.run("hi")
            elapsed = time.perf_counter() - start
            if i >= warmup:
                lat.append(elapsed)
        if result.final_response != "hi" or not result.ok:
            raise RuntimeError(f"unexpected turn result: {result}")
    return lat


def mcp_latencies(ctx: Context, n: int, warmup: int) -> List[float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> List[float]:
        params = StdioServerParameters(command=ctx.node, args=[str(BENCH / "mcp_server.mjs")], cwd=str(REPO))
        lat: List[float] = []
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i in range(warmup + n):
                    start = time.perf_counter()
                    result = await session.call_tool("echo", {"text": "hi"})
                    elapsed = time.perf_counter() - start
                    if i >= warmup:
                        lat.append(elapsed)
                if result.content[0].text != "hi":  # type: ignore[union-attr]
                    raise RuntimeError(f"unexpected tool result: {result}")
        return lat

    return asyncio.run(run())


def run(ctx: Context) -> Result:
    n, warmup, rounds = ctx.count(COUNTS["prompts"]), ctx.count(COUNTS["warmup"]), ctx.count(COUNTS["rounds"])
    model = write_script(ctx.tmp, "one-chunk.json", {"steps": [{"text": "hi"}]})
    cases: List[Tuple[str, Callable[[], List[float]]]] = [
        ("floor: raw Python <-> Node NDJSON echo", lambda: raw_echo_latencies(ctx, n, warmup)),
        ("raw Python <-> bridge, --no-session-log", lambda: raw_bridge_latencies(ctx, n, warmup, model)),
        ("SDK Session.run, --no-session-log", lambda: sdk_latencies(ctx, n, warmup, model, session_log=False)),
        ("SDK Session.run, session log on (default)", lambda: sdk_latencies(ctx, n, warmup, model, session_log=True)),
    ]
    have_mcp = mcp_available()
    steady = ctx.count(COUNTS["steady_warmup"])
    mcp_name = "MCP tools/call (TS SDK server, mcp Python client)"
    steady_sdk = f"SDK Session.run, --no-session-log, after {steady:,} warm-up prompts"
    steady_mcp = f"MCP tools/call, after {steady:,} warm-up calls"
    steady_cases: List[Tuple[str, Callable[[], List[float]]]] = []
    if have_mcp:
        cases.append((mcp_name, lambda: mcp_latencies(ctx, n, warmup)))
        steady_cases = [(steady_sdk, lambda: sdk_latencies(ctx, n, steady, model, session_log=False)),
                        (steady_mcp, lambda: mcp_latencies(ctx, n, steady))]
    samples: Dict[str, List[List[float]]] = {name: [] for name, _ in cases + steady_cases}
    # The long warmed-up runs get rounds of their own, after the others, so they cannot weigh on them.
    for group in (cases, steady_cases):
        for _ in range(rounds):
            for name, fn in group:
                samples[name].append(fn())
    cases = cases + steady_cases
    res = Result(f"Prompt round trip: {n:,} sequential trivial prompts (median over {rounds} rounds)",
                 ["path", "p50 ms", "p99 ms", "p50 vs floor", "p50 vs MCP"])
    p50 = {name: median([percentile(s, 50) for s in runs]) for name, runs in samples.items()}
    p99 = {name: median([percentile(s, 99) for s in runs]) for name, runs in samples.items()}
    floor = p50[cases[0][0]]
    mcp = p50[mcp_name] if have_mcp else None
    for name, _ in cases:
        # The warmed-up rows are set against the warmed-up MCP.
        versus = p50[steady_mcp] if name in (steady_sdk, steady_mcp) else mcp
        res.row(name, f"{p50[name] * 1000:.3f}", f"{p99[name] * 1000:.3f}", f"{p50[name] / floor:.2f}x",
                f"{p50[name] / versus:.2f}x" if versus else "-")
    sdk, sdk_log = cases[2][0], cases[3][0]
    if mcp:
        res.goal("round trip: SDK prompt faster than an MCP tool call (p50, --no-session-log)", f"{p50[sdk] / mcp:.2f}x of MCP", p50[sdk] < mcp)
        res.goal("round trip: the same with the session log on (p50, informational)", f"{p50[sdk_log] / mcp:.2f}x of MCP", None)
        res.goal("round trip: p99, --no-session-log (informational)", f"{p99[sdk] / p99[mcp_name]:.2f}x of MCP", None)
        res.goal(f"round trip: p99 after {steady:,} warm-up prompts, both sides (informational)",
                 f"{p99[steady_sdk] * 1000:.2f} ms vs {p99[steady_mcp] * 1000:.2f} ms, {p99[steady_sdk] / p99[steady_mcp]:.2f}x of MCP", None)
    else:
        res.notes.append("MCP rows skipped: the `mcp` Python package is not importable (bench/run.sh installs it in bench/.venv).")
    res.notes.append("A prompt is a whole agent turn: 6 session.event notifications (user/message, turn/start, step/start, "
                     "one assistant/chunk, assistant/message, turn/end) and the response; the echo and the MCP call are one response each.")
    res.notes.append("All prompts go to one session (its history grows to the prompt count); with the log on, each turn ends with an fsync.")
    if have_mcp:
        res.notes.append(f"The {n:,} prompts after {warmup} warm-up ones take about half a second, while V8 is still compiling the "
                         "turn's code (~200 ms of TurboFan work on a background thread, competing for the 2 cores with the "
                         f"client): the p99 of those rows is mostly that. The rows after {steady:,} warm-up prompts show the "
                         "compiled steady state, for the SDK and for MCP alike.")
    return res

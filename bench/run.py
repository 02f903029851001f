#!/usr/bin/env python3
"""harness-bridge benchmarks. Every figure is a ratio against a baseline measured in the same
run, side by side (runs interleaved, medians), so a noisy or shared machine moves both sides.

    bash bench/run.sh                 # everything; prints the table, writes bench/results.md
    bash bench/run.sh --quick         # tiny counts, a few seconds (the CI smoke runs this)
    bash bench/run.sh --only cold,size

bench/run.sh builds what is missing (scripts/setup.sh) and runs this file with bench/.venv,
a bench-only venv holding the SDK and the `mcp` client (the MCP peer of the round trip), kept
apart from the test venv (which has `mcp` too, for the MCP tests' servers) so the figures do not
move with the test tools. Without `mcp` importable, the MCP rows are skipped, not failed.

Sections (names for --only):
  cold        spawn -> `initialize` response: bin/harness-bridge and the plain bundle under
              node, against spawn -> exit of `node -e 0`; with the environment as it is, and
              again without NODE_EXTRA_CA_CERTS when it is set (Node loads it at every start).
  throughput  a scripted turn of N chunks read through the SDK's on_notification, against the
              floor: a Node writer of the same NDJSON lines to a raw Python json.loads reader.
  roundtrip   N sequential one-chunk prompts through the SDK (p50/p99), against a raw NDJSON
              echo (Node) driven by a raw Python reader/writer, and an MCP tool call doing the
              same (@modelcontextprotocol/sdk stdio server, `mcp` Python client).
  memory      N events to a reader 10x slower than the bridge writes: bridge VmRSS at 10%,
              50%, 90% and 100% of N, and VmHWM, against the RSS of the idle initialized bridge.
  size        bin/harness-bridge against a stripped copy of the node it was made from.
  store       events/s with the durable JSONL store on and off (--no-session-log).
  death       SIGKILL of the bridge -> TransportClosedError in the SDK caller, against a raw
              reader's EOF on the same kill.
  search      grep (a rare string; a common one capped at 500) and glob through the bridge on a
              generated tree of 40 000+ files with a .gitignore, against ripgrep on the same tree;
              the bridge's RSS during the searches against its idle RSS; cancel latency of a
              running grep; the built-in engine (HARNESS_RG=off) for information.
  sessions    open files and RSS after 10 000 sessions used once.
  resume      spawn -> first prompt response of a session with 1k … 1M logged events, against
              a Node process reading the same file (bytes; bytes + JSON.parse of each line).
  session-list  session/list over 10 000 sessions (first listing and later ones), against
              readdir + stat of their folder (bench/sessions_bench.py).
  client-tools  a scripted turn calling a Python client tool (@tool: model -> bridge -> Python ->
              bridge), p50 of the call (assistant/message -> tool/result as the SDK sees them)
              and of the turn, against the same turn calling the built-in read_file.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.util
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
BIN = REPO / "bin" / "harness-bridge"
BUNDLE = REPO / "build" / "harness-bridge.cjs"


def _pinned_node() -> str:
    """The Node the binary embeds (scripts/pinned-node.mjs, package.json `config.embeddedNode`):
    the baselines (`node -e 0`, the stripped node, the Node writers) must be that runtime, not the
    build machine's node, or a ratio would compare two different Node versions."""
    if os.environ.get("HARNESS_BENCH_NODE"):
        return os.environ["HARNESS_BENCH_NODE"]
    system = shutil.which("node") or "node"
    script = REPO / "scripts" / "pinned-node.mjs"
    if script.exists():
        found = subprocess.run([system, str(script)], capture_output=True, text=True, cwd=REPO)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return system


NODE = _pinned_node()
sys.path.insert(0, str(REPO / "python" / "sdk" / "src"))

from deepseek_harness import DeepSeekHarness, TransportClosedError, tool  # noqa: E402


def _load_notifications_bench() -> Any:
    """python/sdk/scripts/bench_notifications.py: its raw reader and SDK reader are reused here."""
    path = REPO / "python" / "sdk" / "scripts" / "bench_notifications.py"
    spec = importlib.util.spec_from_file_location("bench_notifications", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# Counts


class Counts:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.cold_runs = 3 if quick else 21
        self.chunks = 5_000 if quick else 200_000
        self.throughput_runs = 1 if quick else 5
        self.prompts = 50 if quick else 1_000
        self.roundtrip_rounds = 1 if quick else 5
        self.warmup = 5 if quick else 50
        self.steady_warmup = 10 if quick else 3_000
        self.memory_events = 10_000 if quick else 1_000_000
        self.store_prompts = 20 if quick else 500
        self.store_steps = 20 if quick else 1_000
        self.store_runs = 1 if quick else 3
        self.deaths = 2 if quick else 15
        self.search_files = 2_000 if quick else 40_000
        self.search_rounds = 1 if quick else 5
        self.sessions = 500 if quick else 10_000
        self.tool_turns = 30 if quick else 1_000
        self.tool_rounds = 1 if quick else 5


# ---------------------------------------------------------------------------------------------
# Helpers


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def line(obj: Dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def initialize_request(cwd: str, model: str, **extra: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"cwd": cwd, "provider": "scripted", "model": model, **extra}})


def prompt_request(request_id: int, session_id: str, text: str = "go") -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt",
                 "params": {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": text}]}})


def write_script(tmp: Path, name: str, script: Dict[str, Any]) -> str:
    path = tmp / name
    path.write_text(json.dumps(script))
    return str(path)


def bridge_env(tmp: Path, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["HARNESS_SESSION_ROOT"] = str(tmp / "sessions")  # never the user's own state folder
    env.pop("NODE_OPTIONS", None)
    return env


def proc_status(pid: int) -> Dict[str, int]:
    """VmRSS / VmHWM of a process in kB (Linux)."""
    out: Dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for row in f:
                if row.startswith(("VmRSS:", "VmHWM:")):
                    key, value = row.split(":", 1)
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def mb(kb: float) -> str:
    return f"{kb / 1024:.1f} MB"


class Result:
    """One section's rows, and the goals it checks."""

    def __init__(self, title: str, headers: Sequence[str]) -> None:
        self.title = title
        self.headers = list(headers)
        self.rows: List[List[str]] = []
        self.goals: List[Tuple[str, str, Optional[bool]]] = []  # (goal, measured, met)
        self.notes: List[str] = []

    def row(self, *cells: Any) -> None:
        self.rows.append([str(c) for c in cells])

    def goal(self, goal: str, measured: str, met: Optional[bool]) -> None:
        self.goals.append((goal, measured, met))

    def markdown(self) -> str:
        out = [f"### {self.title}", "", "| " + " | ".join(self.headers) + " |", "|" + "---|" * len(self.headers)]
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        out += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"

    def text(self) -> str:
        widths = [max(len(h), *(len(r[i]) for r in self.rows)) if self.rows else len(h) for i, h in enumerate(self.headers)]
        fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
        out = [f"== {self.title}", fmt.format(*self.headers)] + [fmt.format(*r) for r in self.rows]
        out += [f"   note: {n}" for n in self.notes]
        return "\n".join(out)


QUICK_VERDICT = "not judged (--quick)"


def verdict(met: Optional[bool], quick: bool) -> str:
    """A goal's verdict column. --quick's counts are too small for a figure to mean anything, so
    it judges nothing: a "NOT met" there would be noise a reader could take for a regression."""
    if quick:
        return QUICK_VERDICT
    return "n/a" if met is None else ("met" if met else "NOT met")


# ---------------------------------------------------------------------------------------------
# 1. Cold start


def spawn_to_exit(cmd: List[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def spawn_to_initialize(cmd: List[str], env: Dict[str, str], request: bytes) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(request)
    proc.stdin.flush()
    answer = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.stdin.close()  # EOF: the bridge exits 0
    proc.wait()
    if b'"result"' not in answer:
        raise RuntimeError(f"{cmd[0]}: no initialize result: {answer[:200]!r}")
    return elapsed


def bench_cold(counts: Counts, tmp: Path) -> Result:
    res = Result("Cold start: spawn -> initialize response (median)", ["environment", "what", "ms", "ratio vs node -e 0"])
    request = initialize_request(str(tmp), "demo")
    envs = [("as is", bridge_env(tmp))]
    if "NODE_EXTRA_CA_CERTS" in os.environ:
        without = bridge_env(tmp)
        without.pop("NODE_EXTRA_CA_CERTS")
        envs[0] = (f"NODE_EXTRA_CA_CERTS={os.environ['NODE_EXTRA_CA_CERTS']}", envs[0][1])
        envs.append(("without NODE_EXTRA_CA_CERTS", without))
    cases: List[Tuple[str, Callable[[Dict[str, str]], float]]] = [
        ("node -e 0 (spawn -> exit)", lambda env: spawn_to_exit([NODE, "-e", "0"], env)),
        ("bin/harness-bridge", lambda env: spawn_to_initialize([str(BIN), "--stdio"], env, request)),
        ("node build/harness-bridge.cjs", lambda env: spawn_to_initialize([NODE, str(BUNDLE), "--stdio"], env, request)),
    ]
    first_ratio = None
    for label, env in envs:
        times: Dict[str, List[float]] = {name: [] for name, _ in cases}
        for name, fn in cases:  # warm the page cache
            fn(env)
        for _ in range(counts.cold_runs):
            for name, fn in cases:
                times[name].append(fn(env))
        base = median(times[cases[0][0]])
        for name, _ in cases:
            m = median(times[name])
            res.row(label, name, f"{m * 1000:.1f}", f"{m / base:.2f}x")
        ratio = median(times["bin/harness-bridge"]) / base
        if first_ratio is None:
            first_ratio = ratio
            res.goal("cold start: bin within 1.15x of node -e 0 (environment as is)", f"{ratio:.2f}x", ratio <= 1.15)
        else:
            res.goal("cold start, without NODE_EXTRA_CA_CERTS (informational)", f"{ratio:.2f}x, +{(median(times['bin/harness-bridge']) - base) * 1000:.1f} ms", None)
    res.notes.append(f"{counts.cold_runs} interleaved runs per row after one warm-up; the bridge runs with its default flags (session log on, in a temp root).")
    return res


# ---------------------------------------------------------------------------------------------
# 2. Event throughput


def bench_throughput(counts: Counts, tmp: Path) -> Result:
    bn = _load_notifications_bench()
    n = counts.chunks
    model = bn.model("real", n, tmp)  # one step: "0123456789abcdef" x n, 16 characters a chunk
    bridge = [str(BIN), "--stdio", "--no-session-log"]
    floor = [NODE, str(BENCH / "floor_writer.mjs"), "--chunks", str(n)]
    cases = [
        ("floor: Node writer -> raw Python reader (json.loads)", lambda: bn.raw_run(floor, model, str(tmp))),
        ("bridge -> raw Python reader (json.loads)", lambda: bn.raw_run(bridge, model, str(tmp))),
        ("bridge -> SDK on_notification", lambda: bn.sdk_run(bridge, model, str(tmp))),
        ("Node writer -> SDK on_notification (the SDK's own ceiling)", lambda: bn.sdk_run(floor, model, str(tmp))),
        ("bridge -> DeepSeekHarness.run, no callback (the result keeps every notification)", lambda: bn.result_run(bridge, model, str(tmp))),
    ]
    rates: Dict[str, List[float]] = {name: [] for name, _ in cases}
    for _ in range(counts.throughput_runs):
        for name, fn in cases:
            count, elapsed = fn()
            if count < n:
                raise RuntimeError(f"{name}: {count} notifications, expected at least {n}")
            rates[name].append(count / elapsed)
    res = Result(f"Event throughput: one turn of {n:,} chunks (median of {counts.throughput_runs})", ["path", "events/s", "ratio vs floor"])
    base = median(rates[cases[0][0]])
    for name, _ in cases:
        res.row(name, f"{median(rates[name]):,.0f}", f"{median(rates[name]) / base:.2f}")
    ratio = median(rates[cases[2][0]]) / base
    res.goal("throughput: SDK >= 0.70 of the floor", f"{ratio:.2f}", ratio >= 0.70)
    res.notes.append("Readers and the prompt are python/sdk/scripts/bench_notifications.py's (raw_run, sdk_run, result_run). "
                     "The Node writer -> SDK row feeds the SDK the floor's stream: the most the SDK can reach on this machine, whatever the bridge does.")
    res.notes.append("DeepSeekHarness.run without a callback keeps every notification in its TurnResult; the chunks among them stay "
                     "undecoded until read (4 dicts each, traversed by every full collection of Python's cyclic GC, would halve the rate).")
    return res


# ---------------------------------------------------------------------------------------------
# 3. Prompt round trip


def raw_echo_latencies(n: int, warmup: int) -> List[float]:
    proc = subprocess.Popen([NODE, str(BENCH / "echo_server.mjs")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
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


def raw_bridge_latencies(n: int, warmup: int, tmp: Path, model: str) -> List[float]:
    proc = subprocess.Popen([str(BIN), "--stdio", "--no-session-log"], env=bridge_env(tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
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


def sdk_latencies(n: int, warmup: int, tmp: Path, model: str, session_log: bool) -> List[float]:
    harness = DeepSeekHarness(provider="scripted", model=model, cwd=str(tmp), session_root=str(tmp / "sessions"), bridge_bin=BIN)
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


def mcp_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def mcp_latencies(n: int, warmup: int) -> List[float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> List[float]:
        params = StdioServerParameters(command=NODE, args=[str(BENCH / "mcp_server.mjs")], cwd=str(REPO))
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


def bench_roundtrip(counts: Counts, tmp: Path) -> Result:
    n, warmup = counts.prompts, counts.warmup
    model = write_script(tmp, "one-chunk.json", {"steps": [{"text": "hi"}]})
    cases: List[Tuple[str, Callable[[], List[float]]]] = [
        ("floor: raw Python <-> Node NDJSON echo", lambda: raw_echo_latencies(n, warmup)),
        ("raw Python <-> bridge, --no-session-log", lambda: raw_bridge_latencies(n, warmup, tmp, model)),
        ("SDK Session.run, --no-session-log", lambda: sdk_latencies(n, warmup, tmp, model, session_log=False)),
        ("SDK Session.run, session log on (default)", lambda: sdk_latencies(n, warmup, tmp, model, session_log=True)),
    ]
    have_mcp = mcp_available()
    steady = counts.steady_warmup
    mcp_name = "MCP tools/call (TS SDK server, mcp Python client)"
    steady_sdk = f"SDK Session.run, --no-session-log, after {steady:,} warm-up prompts"
    steady_mcp = f"MCP tools/call, after {steady:,} warm-up calls"
    steady_cases: List[Tuple[str, Callable[[], List[float]]]] = []
    if have_mcp:
        cases.append((mcp_name, lambda: mcp_latencies(n, warmup)))
        steady_cases = [(steady_sdk, lambda: sdk_latencies(n, steady, tmp, model, session_log=False)),
                        (steady_mcp, lambda: mcp_latencies(n, steady))]
    samples: Dict[str, List[List[float]]] = {name: [] for name, _ in cases + steady_cases}
    # The long warmed-up runs get rounds of their own, after the others, so they cannot weigh on them.
    for group in (cases, steady_cases):
        for _ in range(counts.roundtrip_rounds):
            for name, fn in group:
                samples[name].append(fn())
    cases = cases + steady_cases
    res = Result(f"Prompt round trip: {n:,} sequential trivial prompts (median over {counts.roundtrip_rounds} rounds)",
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


# ---------------------------------------------------------------------------------------------
# 4. Memory under a slow reader


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


def memory_run(tmp: Path, turns: int, chunks_per_turn: int, rate: Optional[float],
               marks: Sequence[int]) -> Dict[str, Any]:
    """One bridge, `turns` prompts of `chunks_per_turn` chunks each, read at `rate`; VmRSS/VmHWM at the marks."""
    model = write_script(tmp, f"memory-{chunks_per_turn}.json", {"steps": [{"text": "0123456789abcdef", "chunkSize": 16, "repeat": chunks_per_turn}]})
    proc = subprocess.Popen([str(BIN), "--stdio", "--no-session-log"], env=bridge_env(tmp),
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


def bench_memory(counts: Counts, tmp: Path) -> Result:
    n = counts.memory_events
    marks = [n // 10, n // 2, n * 9 // 10, n]
    # The writer's own pace, with a reader that only counts lines.
    calibration = memory_run(tmp, 1, max(n // 10, 5_000), None, [])
    slow = calibration["rate"] / 10
    # Many turns: what backpressure alone does. One turn: the same events, all one message.
    per_turn = max(n // 100, 100)
    message_bytes = 16 * n
    workloads = [
        (f"{n // per_turn} turns of {per_turn:,} chunks", memory_run(tmp, n // per_turn, per_turn, slow, marks), None),
        (f"1 turn of {n:,} chunks (one {message_bytes / 1048576:.1f} MB message)", memory_run(tmp, 1, n, slow, marks), message_bytes),
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


# ---------------------------------------------------------------------------------------------
# 5. Size


def bench_size(counts: Counts, tmp: Path) -> Result:
    stripped = tmp / "node-stripped"
    shutil.copyfile(os.path.realpath(NODE), stripped)
    note = None
    try:
        subprocess.run(["strip", str(stripped)], check=True, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        note = "strip is not available: the node copy is unstripped (the build keeps symbols too, then)"
    node_size = stripped.stat().st_size
    bin_size = BIN.stat().st_size
    bundle_size = BUNDLE.stat().st_size
    res = Result("Size", ["file", "bytes", "ratio vs stripped node"])
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True).stdout.strip()
    res.row(f"node {version}, stripped", f"{node_size:,}", "1.00x")
    res.row("bin/harness-bridge", f"{bin_size:,}", f"{bin_size / node_size:.3f}x")
    res.row("build/harness-bridge.cjs (the bundle inside it)", f"{bundle_size:,}", f"{bundle_size / node_size:.4f}x")
    ratio = bin_size / node_size
    res.goal("size: binary <= 1.05x the stripped node", f"{ratio:.3f}x", ratio <= 1.05)
    if note:
        res.notes.append(note)
    stripped.unlink()
    return res


# ---------------------------------------------------------------------------------------------
# 6. Durable log cost


def raw_session(tmp: Path, model: str, session_log: bool, requests: Callable[[int], bytes], count: int, **init: Any) -> Tuple[int, float]:
    """Sends `count` prompts one after the other; returns (notifications, seconds)."""
    args = [str(BIN), "--stdio"] + ([] if session_log else ["--no-session-log"])
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


def bench_store(counts: Counts, tmp: Path) -> Result:
    (tmp / "notes.txt").write_text("a small file\n")
    one_chunk = write_script(tmp, "store-turn.json", {"steps": [{"text": "ok"}]})
    steps = write_script(tmp, "store-steps.json", {"steps": [
        *({"toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]} for _ in range(counts.store_steps)),
        {"text": "done"},
    ]})
    workloads = [
        (f"{counts.store_prompts} one-step turns (an fsync each)",
         lambda log: raw_session(tmp, one_chunk, log, lambda rid: prompt_request(rid, "store"), counts.store_prompts)),
        (f"1 turn of {counts.store_steps} tool-call steps (appends, one fsync)",
         lambda log: raw_session(tmp, steps, log, lambda rid: prompt_request(rid, "steps"), 1, maxSteps=counts.store_steps + 1)),
    ]
    res = Result(f"Durable log cost: events/s with the JSONL store on and off (median of {counts.store_runs})",
                 ["workload", "log off events/s", "log on events/s", "on / off"])
    for name, fn in workloads:
        rates: Dict[bool, List[float]] = {False: [], True: []}
        for _ in range(counts.store_runs):
            for log in (False, True):
                count, elapsed = fn(log)
                rates[log].append(count / elapsed)
        off, on = median(rates[False]), median(rates[True])
        res.row(name, f"{off:,.0f}", f"{on:,.0f}", f"{on / off:.2f}")
        res.goal(f"store cost, {name} (informational)", f"{on / off:.2f} of the rate without the log", None)
    res.notes.append("Raw JSON-RPC client (no SDK) so that the bridge's own cost shows; durable events are appended "
                     "(writeSync) before they are announced, and the log is fsynced at each turn end.")
    return res


# ---------------------------------------------------------------------------------------------
# 7. Bridge death


def sdk_death_delay(tmp: Path, model: str) -> float:
    harness = DeepSeekHarness(provider="scripted", model=model, cwd=str(tmp), session_root=str(tmp / "sessions"), bridge_bin=BIN)
    harness.start()
    started = threading.Event()
    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            harness.run("hang", on_notification=lambda n: started.set())
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome["at"] = time.perf_counter()
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    if not started.wait(10):
        raise RuntimeError("the hanging turn never started")
    proc = harness.client.process
    assert proc is not None
    killed = time.perf_counter()
    os.kill(proc.pid, signal.SIGKILL)
    worker.join(10)
    harness.close()
    if not isinstance(outcome.get("error"), TransportClosedError):
        raise RuntimeError(f"expected TransportClosedError, got {outcome.get('error')!r}")
    return outcome["at"] - killed


def raw_death_delay(tmp: Path, model: str) -> float:
    proc = subprocess.Popen([str(BIN), "--stdio"], env=bridge_env(tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(initialize_request(str(tmp), model))
    proc.stdin.write(prompt_request(2, "hang"))
    proc.stdin.flush()
    proc.stdout.readline()  # initialize
    proc.stdout.readline()  # the turn's first notification
    killed = time.perf_counter()
    os.kill(proc.pid, signal.SIGKILL)
    while proc.stdout.readline():
        pass
    at = time.perf_counter()
    proc.wait()
    return at - killed


def bench_death(counts: Counts, tmp: Path) -> Result:
    model = write_script(tmp, "hang.json", {"steps": [{"text": "x", "hang": True}]})
    delays: Dict[str, List[float]] = {"raw": [], "sdk": []}
    for _ in range(counts.deaths):
        delays["raw"].append(raw_death_delay(tmp, model))
        delays["sdk"].append(sdk_death_delay(tmp, model))
    res = Result(f"Bridge death: SIGKILL -> error in the caller ({counts.deaths} kills each)", ["caller", "median ms", "max ms", "ratio vs raw EOF (median)"])
    base = median(delays["raw"])
    res.row("floor: raw reader sees EOF", f"{base * 1000:.2f}", f"{max(delays['raw']) * 1000:.2f}", "1.00x")
    sdk = median(delays["sdk"])
    res.row("SDK: Session.run raises TransportClosedError", f"{sdk * 1000:.2f}", f"{max(delays['sdk']) * 1000:.2f}", f"{sdk / base:.1f}x")
    res.goal("death: SIGKILL -> TransportClosedError < 100 ms (max)", f"{max(delays['sdk']) * 1000:.1f} ms", max(delays["sdk"]) < 0.1)
    gone = [client_gone_delay(tmp, model) for _ in range(counts.deaths)]
    res.row("the other way: client SIGKILLed during a hanging turn -> bridge gone", f"{median(gone) * 1000:.2f}", f"{max(gone) * 1000:.2f}",
            f"{median(gone) / base:.1f}x")
    res.goal("client death: SIGKILL of the client -> bridge exited < 2 s (max)", f"{max(gone) * 1000:.0f} ms", max(gone) < 2.0)
    res.notes.append("The bridge notices a dead client by its parent pid changing (polled every 200 ms, PARENT_POLL_MS in "
                     "src/cli.ts), aborts the turn, syncs the log and exits.")
    return res


CLIENT_GONE_SCRIPT = """
import subprocess, sys, time
bridge = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
bridge.stdin.write(sys.stdin.buffer.read())
bridge.stdin.flush()
bridge.stdout.readline()
print(bridge.pid, flush=True)
time.sleep(3600)
"""


def client_gone_delay(tmp: Path, model: str) -> float:
    """A client process spawns the bridge, starts a turn that hangs, and is SIGKILLed: seconds until the bridge is gone."""
    requests = initialize_request(str(tmp), model) + prompt_request(2, "gone")
    client = subprocess.Popen([sys.executable, "-c", CLIENT_GONE_SCRIPT, str(BIN), "--stdio", "--no-session-log"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=bridge_env(tmp))
    assert client.stdin and client.stdout
    client.stdin.write(requests)
    client.stdin.close()
    pid = int(client.stdout.readline())
    time.sleep(0.05)  # the prompt is running
    start = time.perf_counter()
    client.kill()
    client.wait()
    while time.perf_counter() - start < 10:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except OSError:
            break
        time.sleep(0.002)
    return time.perf_counter() - start



# ---------------------------------------------------------------------------------------------
# 8. Search


SEARCH_RARE = "zqxRareNeedle42"
SEARCH_COMMON = "function"
SEARCH_GLOB = "**/*.js"
# The baseline applies the same rules as the tools: .gitignore without a git repository, dotfiles.
RG_RULES = ["--no-config", "--no-require-git", "--hidden"]


def search_tree(root: Path, files: int) -> None:
    """`files` searched .js files (plus ignored ones) in src/pNN/mMM/, a .gitignore (nested, with a negation)."""
    body = "".join(f"function helper{i}(value) {{\n  const result = value * {i} + Math.max(value, {i});\n  return result;\n}}\n" for i in range(12))
    (root / ".gitignore").write_text("node_modules/\n*.log\nbuild/\n")
    per_dir = 40
    written = 0
    d = 0
    while written < files:
        folder = root / "src" / f"p{d // 25:02d}" / f"m{d % 25:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for k in range(min(per_dir, files - written)):
            rare = f"// {SEARCH_RARE}\n" if written in (files // 3, files // 2, files - 7) else ""
            (folder / f"f{k:02d}.js").write_text(f"// file {written}\n{rare}{body}")
            written += 1
        d += 1
    nested = root / "src" / "p00"
    (nested / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    (nested / "x.tmp").write_text(f"{SEARCH_RARE}\n")
    (nested / "keep.tmp").write_text("kept\n")
    for k in range(max(files // 8, 10)):  # ignored: must never be searched
        folder = root / "node_modules" / f"dep{k // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"i{k}.js").write_text(f"{SEARCH_RARE} in an ignored dependency\n{body}")
    (root / "debug.log").write_text(f"{SEARCH_RARE}\n")


class SearchBridge:
    """One bridge serving one session whose every turn is one tool call; RSS sampled while it runs."""

    def __init__(self, tmp: Path, tree: Path, tool: str, arguments: Dict[str, Any], env_extra: Dict[str, str]) -> None:
        script = {"turns": [{"steps": [{"toolCalls": [{"name": tool, "arguments": arguments}]}, {"text": "done"}]}]}
        model = write_script(tmp, f"search-{tool}-{abs(hash(json.dumps(arguments))) % 10**8}.json", script)
        env = {**bridge_env(tmp), **env_extra}
        self.proc = subprocess.Popen([str(BIN), "--stdio", "--no-session-log"], env=env, cwd=str(tree),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(initialize_request(str(tree), model))
        self.proc.stdin.flush()
        self.proc.stdout.readline()
        self.next_id = 2
        self.tool_ms = float("nan")
        time.sleep(0.3)  # the agent modules load right after the initialize response
        self.idle_kb = proc_status(self.proc.pid).get("VmRSS", 0)
        self.peak_kb = self.idle_kb

    def run(self, cancel_after: Optional[float] = None) -> Tuple[float, str, Optional[float]]:
        """One prompt: (seconds to the tool result, its text, cancel latency if cancelled); the
        tool's own time (the event's durationMs) is left in self.tool_ms."""
        assert self.proc.stdin and self.proc.stdout
        rid = self.next_id
        self.next_id += 2
        sampling = True

        def sample() -> None:
            while sampling:
                self.peak_kb = max(self.peak_kb, proc_status(self.proc.pid).get("VmRSS", 0))
                time.sleep(0.002)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.perf_counter()
        self.proc.stdin.write(prompt_request(rid, "search"))
        self.proc.stdin.flush()
        cancel_sent: Optional[float] = None
        cancel_latency: Optional[float] = None
        timer: Optional[threading.Timer] = None
        if cancel_after is not None:
            def send_cancel() -> None:
                nonlocal cancel_sent
                assert self.proc.stdin
                cancel_sent = time.perf_counter()
                self.proc.stdin.write(line({"jsonrpc": "2.0", "id": rid + 1, "method": "session/cancel", "params": {"sessionId": "search"}}))
                self.proc.stdin.flush()
            timer = threading.Timer(cancel_after, send_cancel)
            timer.start()
        elapsed = float("nan")
        text = ""
        done = {rid: False, rid + 1: cancel_after is None}
        while not all(done.values()):
            msg = json.loads(self.proc.stdout.readline())
            event = msg.get("params", {}).get("event", {}) if msg.get("method") == "session.event" else {}
            if event.get("type") == "tool/result":
                elapsed = time.perf_counter() - start
                data = event.get("data", event)
                text = "".join(b.get("text", "") for b in data.get("content", []))
                self.tool_ms = float(data.get("durationMs", "nan"))
            if msg.get("id") in done:
                done[msg["id"]] = True
                if msg["id"] == rid + 1 and cancel_sent is not None:
                    cancel_latency = time.perf_counter() - cancel_sent
        if timer:
            timer.join()
        sampling = False
        sampler.join()
        return elapsed, text, cancel_latency

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def rg_time(cmd: List[str], cwd: Path, first_lines: Optional[int] = None) -> float:
    """ripgrep's wall time to its end (or to its first `first_lines` lines of output)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout
    if first_lines is None:
        proc.stdout.read()
    else:
        for _ in range(first_lines):
            if not proc.stdout.readline():
                break
        proc.kill()
    proc.wait()
    return time.perf_counter() - start


def bench_search(counts: Counts, tmp: Path) -> Result:
    rg = next((p for p in ("/usr/bin/rg", "/usr/local/bin/rg", "/bin/rg") if os.access(p, os.X_OK)), None)
    res = Result(f"Search: grep and glob through the bridge against ripgrep on {counts.search_files:,} files "
                 f"(median of {counts.search_rounds})",
                 ["workload", "ripgrep ms", "tool ms", "tool / ripgrep", "prompt to result ms", "RSS growth"])
    if rg is None:
        res.notes.append("ripgrep is not installed (apt-get install ripgrep): no baseline, section skipped.")
        return res
    tree = tmp / "search-tree"
    tree.mkdir()
    t0 = time.perf_counter()
    search_tree(tree, counts.search_files)
    res.notes.append(f"Tree: {counts.search_files:,} searched .js files (~2 KiB) in 40-file folders, a .gitignore "
                     f"(node_modules/ of {max(counts.search_files // 8, 10):,} files, *.log, a nested one with a negation); "
                     f"generated in {time.perf_counter() - t0:.1f} s.")
    workloads = [
        ("grep rare string", "grep", {"pattern": SEARCH_RARE}, [rg, *RG_RULES, "-n", SEARCH_RARE], None),
        ("grep common string, capped at 500", "grep", {"pattern": SEARCH_COMMON}, [rg, *RG_RULES, "-n", SEARCH_COMMON], 500),
        (f"glob {SEARCH_GLOB}", "glob", {"pattern": SEARCH_GLOB}, [rg, *RG_RULES, "--files", "-g", "*.js"], None),
    ]
    idle_peak: List[Tuple[int, int]] = []
    for name, tool, arguments, rg_cmd, first in workloads:
        bridge = SearchBridge(tmp, tree, tool, arguments, {})
        bridge.run()  # warm-up: loads the search modules, fills the page cache
        base_ms: List[float] = []
        tool_ms: List[float] = []
        wall_ms: List[float] = []
        text = ""
        for _ in range(counts.search_rounds):
            base_ms.append(rg_time(rg_cmd, tree, first) * 1000)
            elapsed, text, _ = bridge.run()
            wall_ms.append(elapsed * 1000)
            tool_ms.append(bridge.tool_ms)
        bridge.close()
        idle_peak.append((bridge.idle_kb, bridge.peak_kb))
        b, o = median(base_ms), median(tool_ms)
        res.row(name, f"{b:.0f}", f"{o:.0f}", f"{o / b:.2f}x", f"{median(wall_ms):.0f}", f"+{(bridge.peak_kb - bridge.idle_kb) / 1024:.1f} MB")
        res.goal(f"search: {name} within 3x of ripgrep", f"{o / b:.2f}x ({o:.0f} ms vs {b:.0f} ms)", o / b <= 3)
        if tool == "grep" and first is None and text.count("\n") != 2:
            res.notes.append(f"unexpected output for {name}: {text[:200]!r}")
    # read_file of a 10 MiB file, its first 2 000 lines (the default), against `head -n 2000`:
    # the tool reads as far as the lines it returns, not the file (issue 34).
    reads = tmp / "read-tree"
    reads.mkdir()
    line = b"x" * 99 + b"\n"
    (reads / "big.txt").write_bytes(line * ((10 * 1024 * 1024) // len(line)))
    bridge = SearchBridge(tmp, reads, "read_file", {"path": "big.txt"}, {})
    bridge.run()
    head_ms: List[float] = []
    read_ms: List[float] = []
    for _ in range(counts.search_rounds):
        head_ms.append(rg_time(["head", "-n", "2000", "big.txt"], reads) * 1000)
        bridge.run()
        read_ms.append(bridge.tool_ms)
    bridge.close()
    b, o = median(head_ms), median(read_ms)
    res.row("read_file of a 10 MiB file, first 2 000 lines (baseline: head -n 2000)", f"{b:.1f}", f"{o:.1f}", f"{o / b:.2f}x", "", "")
    res.goal("read_file: first 2 000 lines of a 10 MiB file within 3x of head -n 2000", f"{o / b:.2f}x ({o:.1f} ms vs {b:.1f} ms)", o / b <= 3)
    growth = max(peak - idle for idle, peak in idle_peak)
    # For context: the capped row's order. The tool returns the first 500 in path order, which
    # ripgrep itself gives only single-threaded (--sort path).
    ordered = median([rg_time([rg, *RG_RULES, "--sort=path", "-n", SEARCH_COMMON], tree, 500) * 1000 for _ in range(counts.search_rounds)])
    res.row("(context) rg --sort=path -n common string, to its 500th line", f"{ordered:.0f}", "", "", "", "")
    res.goal("search: bridge RSS during a search within +50 MB of idle", f"+{growth / 1024:.1f} MB", growth <= 50 * 1024)

    # Cancel of a running grep: ripgrep's run, and the built-in engine's (which runs for seconds).
    for label, env_extra, after in (("ripgrep", {}, 0.1), ("built-in", {"HARNESS_RG": "off"}, 0.3)):
        bridge = SearchBridge(tmp, tree, "grep", {"pattern": "never[0-9]matches"}, env_extra)
        latencies: List[float] = []
        for _ in range(counts.search_rounds):
            _, _, latency = bridge.run(cancel_after=after)
            if latency is not None:
                latencies.append(latency * 1000)
        bridge.close()
        worst = max(latencies) if latencies else float("nan")
        res.row(f"cancel of a running grep ({label} engine): cancel to its answer, max ms", "", f"{worst:.1f}", "", "", "")
        res.goal(f"search: cancel of a running grep ({label}) < 100 ms (max)", f"{worst:.1f} ms", worst < 100)

    # The built-in engine on the same tree, for information (one round: it is the slow path).
    for name, tool, arguments, _, _ in workloads:
        bridge = SearchBridge(tmp, tree, tool, arguments, {"HARNESS_RG": "off"})
        elapsed, _, _ = bridge.run()
        bridge.close()
        res.row(f"{name} (built-in engine, HARNESS_RG=off)", "", f"{bridge.tool_ms:.0f}", "", f"{elapsed * 1000:.0f}",
                f"+{(bridge.peak_kb - bridge.idle_kb) / 1024:.1f} MB")
    res.notes.append("tool ms: the tool call's own time (tool/result durationMs); prompt to result ms: prompt sent -> "
                     "tool/result received (a scripted turn whose step is the tool call, so the turn's own cost is in it); "
                     "ripgrep ms: `rg --no-config --no-require-git --hidden -n PATTERN` (parallel; to its 500th line for the "
                     "capped row) and `rg … --files -g '*.js'`, "
                     "spawned in the tree. RSS: the bridge's VmRSS sampled every 2 ms during the searches, against "
                     "its idle RSS after initialize (ripgrep's own memory is its process's, not counted).")
    return res


# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Many sessions


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def sessions_run(tmp: Path, model: str, session_log: bool, sessions: int, marks: Sequence[int]) -> Dict[int, Tuple[int, int]]:
    """One bridge; one prompt for each of `sessions` new sessions, 20 in flight at a time; (fds, RSS kB) at each mark."""
    args = [str(BIN), "--stdio"] + ([] if session_log else ["--no-session-log"])
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


def bench_sessions(counts: Counts, tmp: Path) -> Result:
    model = write_script(tmp, "session-turn.json", {"steps": [{"text": "hello"}]})
    n = counts.sessions
    res = Result(f"Many sessions: open files and RSS after {n:,} sessions used once, against after the first 20",
                 ["session log", "fds at 20", f"fds at {n:,}", "RSS at 20", f"RSS at {n:,}", "RSS per session"])
    for log in (True, False):
        seen = sessions_run(tmp, model, log, n, [20, n])
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


def bench_resume(counts: Counts, tmp: Path) -> Result:
    import sessions_bench  # bench/sessions_bench.py (this folder is sys.path[0])

    result: Result = sessions_bench.bench_resume(counts.quick, tmp, Result, BIN)
    return result


def bench_session_list(counts: Counts, tmp: Path) -> Result:
    import sessions_bench

    result: Result = sessions_bench.bench_session_list(counts.quick, tmp, Result, BIN)
    return result


# ---------------------------------------------------------------------------------------------
# Client tools


@tool(read_only=True)
def bench_echo(path: str) -> str:
    """Returns the text it is given."""
    return "hi"


def tool_turn_latencies(n: int, warmup: int, tmp: Path, client: bool) -> Tuple[List[float], List[float]]:
    """(call, turn) latencies of n turns of one session, each one tool call then a text: the call
    from its assistant/message to its tool/result as the SDK's callback sees them, the turn
    from run() to its return."""
    name = "bench_echo" if client else "read_file"
    (tmp / "hi.txt").write_text("hi")
    model = write_script(tmp, f"{name}-call.json", {"steps": [
        {"text": "", "toolCalls": [{"id": "c1", "name": name, "arguments": {"path": "hi.txt"}}]}, {"text": "done"}]})
    harness = DeepSeekHarness(provider="scripted", model=model, cwd=str(tmp), bridge_bin=BIN,
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


def bench_client_tools(counts: Counts, tmp: Path) -> Result:
    n, warmup = counts.tool_turns, counts.warmup
    sides = {"built-in read_file": False, "client tool (@tool, sync, worker pool)": True}
    samples: Dict[str, List[Tuple[List[float], List[float]]]] = {name: [] for name in sides}
    for _ in range(counts.tool_rounds):  # interleaved rounds
        for name, client in sides.items():
            samples[name].append(tool_turn_latencies(n, warmup, tmp, client))
    res = Result(f"Client tool round trip: {n:,} turns of one tool call each (median over {counts.tool_rounds} rounds)",
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


SECTIONS: Dict[str, Callable[[Counts, Path], Result]] = {
    "cold": bench_cold,
    "throughput": bench_throughput,
    "roundtrip": bench_roundtrip,
    "memory": bench_memory,
    "size": bench_size,
    "store": bench_store,
    "death": bench_death,
    "search": bench_search,
    "sessions": bench_sessions,
    "resume": bench_resume,
    "session-list": bench_session_list,
    "client-tools": bench_client_tools,
}


def environment() -> List[str]:
    def cmd(*args: str) -> str:
        try:
            return subprocess.run(list(args), capture_output=True, text=True, cwd=REPO).stdout.strip()
        except OSError:
            return "?"

    return [
        f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"- commit: {cmd('git', 'rev-parse', '--short', 'HEAD')}{' (uncommitted changes)' if cmd('git', 'status', '--porcelain', '--untracked-files=no') else ''}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        f"- node {cmd(NODE, '--version')}, python {platform.python_version()}"
        + (f", mcp {importlib.metadata.version('mcp')}" if mcp_available() else ", mcp not installed"),
        f"- NODE_EXTRA_CA_CERTS: {os.environ.get('NODE_EXTRA_CA_CERTS', '(not set)')}",
        f"- measured: {BIN}, {BUNDLE}",
    ]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny counts: checks that every benchmark runs (seconds), measures nothing")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections (default: all): {', '.join(SECTIONS)}")
    parser.add_argument("--bin", type=Path, help="the executable to measure (default: bin/harness-bridge), e.g. an older build for before/after")
    parser.add_argument("--bundle", type=Path, help="the plain bundle to measure (default: build/harness-bridge.cjs)")
    parser.add_argument("--out", type=Path, help="where to write the markdown results (default: bench/results.md; none with --quick)")
    args = parser.parse_args(argv)
    global BIN, BUNDLE
    BIN = args.bin.resolve() if args.bin else BIN
    BUNDLE = args.bundle.resolve() if args.bundle else BUNDLE
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; known: {', '.join(SECTIONS)}")
    for needed in (BIN, BUNDLE):
        if not needed.exists():
            parser.error(f"{needed} is missing: run `bash scripts/setup.sh` (bench/run.sh does)")
    out = args.out if args.out is not None else (None if args.quick else BENCH / "results.md")
    counts = Counts(args.quick)

    results: List[Result] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hb-bench-") as t:
        for name in wanted:
            t0 = time.perf_counter()
            result = SECTIONS[name](counts, Path(t))
            results.append(result)
            print(result.text(), f"\n   ({time.perf_counter() - t0:.1f} s)\n", flush=True)

    goals = [g for r in results for g in r.goals]
    width = max(len(g[0]) for g in goals) if goals else 0
    print("== Goals")
    for goal, measured, met in goals:
        print(f"{goal:<{width}}  {measured:>28}  {verdict(met, args.quick)}")
    print(f"\n({time.perf_counter() - started:.0f} s{', --quick: counts too small to mean anything' if args.quick else ''})")

    if out is not None:
        doc = ["# harness-bridge benchmarks", "",
               "Written by `bash bench/run.sh` (bench/run.py). Every figure is a ratio against a baseline "
               "measured in the same run, runs interleaved; absolute times depend on the machine.", ""]
        doc += environment() + ["", "## Goals", "", "| goal | measured | verdict |", "|---|---|---|"]
        doc += [f"| {g} | {m} | {verdict(v, args.quick)} |" for g, m, v in goals]
        doc += ["", "## Details", ""] + [r.markdown() for r in results]
        tmp_out = out.with_name(out.name + ".tmp")
        tmp_out.write_text("\n".join(doc))
        tmp_out.replace(out)
        print(f"wrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

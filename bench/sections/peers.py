"""The bridge's `session/prompt` round trip (a one-chunk scripted turn) against its peers, every
target driven by the same raw NDJSON client: the official ACP TypeScript SDK agent (a prompt
streaming one `session/update`, then its response), the official MCP TypeScript SDK server
(`tools/call` echo) and a raw Node echo; p50/p99, interleaved in blocks, medians. With the
session log on, the extra p50 against one append + fsync of a line in the same folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from time import perf_counter
from typing import Callable, Dict, List, Optional, Tuple

from common import BENCH, REPO, Context, Count, Result, bridge_env, initialize_request, line, median, percentile, proc_status, prompt_request, write_script

COUNTS = {
    # Every target answers `warmup` requests first (V8 has compiled the hot code by then), then
    # `rounds` blocks of `block` requests each, the targets taking turns block by block (in
    # reverse order every other round).
    "warmup": Count(quick=20, full=3_000),
    "rounds": Count(quick=2, full=10),
    "block": Count(quick=20, full=500),
    # One more bridge, one session: the window of turns measured after the others' warm-up, and
    # the turn after which the same window is measured again (per-turn cost must not grow).
    "window": Count(quick=20, full=1_000),
    "late": Count(quick=60, full=12_000),
}

# A notification line of every target starts so: the client reads it and does not parse it (the
# parse is the client's cost, and the bridge's turn has six of them to the ACP agent's one).
NOTIFICATION = b'{"jsonrpc":"2.0","method"'


class RawPeer:
    """One server process behind a raw stdlib NDJSON client: write a request, read lines until
    its response."""

    def __init__(self, cmd: List[str], request: Callable[[int], bytes], setup: List[bytes], env: Optional[Dict[str, str]] = None) -> None:
        self.proc = subprocess.Popen(cmd, env=env, cwd=str(REPO), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.request = request
        self.next_id = 100
        for frame in setup:  # requests (answered) and notifications (not)
            self.send(frame)
            if b'"id"' in frame:
                self.answer_to(json.loads(frame)["id"])

    def send(self, frame: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(frame)
        self.proc.stdin.flush()

    def answer_to(self, request_id: int) -> Dict[str, object]:
        assert self.proc.stdout
        readline = self.proc.stdout.readline
        while True:
            raw = readline()
            if not raw:
                raise RuntimeError(f"{self.proc.args[0]}: closed its stdout before answering {request_id}")
            if raw.startswith(NOTIFICATION):
                continue
            msg = json.loads(raw)
            if msg.get("id") == request_id:
                if "error" in msg:
                    raise RuntimeError(f"{self.proc.args}: {msg['error']}")
                return msg

    def latencies(self, count: int) -> List[float]:
        assert self.proc.stdin and self.proc.stdout
        write, flush, readline = self.proc.stdin.write, self.proc.stdin.flush, self.proc.stdout.readline
        out: List[float] = []
        for _ in range(count):
            rid = self.next_id
            self.next_id += 1
            frame = self.request(rid)
            start = perf_counter()
            write(frame)
            flush()
            while True:
                raw = readline()
                if not raw.startswith(NOTIFICATION):
                    break
            out.append(perf_counter() - start)
            if json.loads(raw).get("id") != rid:
                raise RuntimeError(f"{self.proc.args}: unexpected answer {raw[:200]!r}")
        return out

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait()


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of a process so far (on-CPU nanoseconds, /proc/PID/task/*/schedstat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that ended meanwhile
    return total / 1e9


def long_session(peer: RawPeer, warmup: int, window: int, late: int) -> Dict[str, Tuple[float, float, int]]:
    """p50 (s), CPU per request (s) and RSS (kB) of `window` turns right after `warmup`, and of
    the `window` turns after turn `late`, all on one session."""
    out: Dict[str, Tuple[float, float, int]] = {}
    peer.latencies(warmup)
    for name, skip in (("early", 0), ("late", late - warmup - window)):
        peer.latencies(skip)
        cpu = cpu_seconds(peer.proc.pid)
        lat = peer.latencies(window)
        out[name] = (percentile(lat, 50), (cpu_seconds(peer.proc.pid) - cpu) / window, proc_status(peer.proc.pid).get("VmRSS", 0))
    return out


class AppendFsync:
    """The floor of a durable turn: one line (the size of a `turn/end` event) appended to a file
    in the session folder's file system and fsynced, in this process."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.line = b'{"type":"turn/end","seq":7,"time":1790000000000,"data":{"turn":1,"reason":{"kind":"completed"},"usage":{}}}\n'

    def latencies(self, count: int) -> List[float]:
        out: List[float] = []
        for _ in range(count):
            start = perf_counter()
            os.write(self.fd, self.line)
            os.fsync(self.fd)
            out.append(perf_counter() - start)
        return out

    def close(self) -> None:
        os.close(self.fd)


class OverwriteSync(AppendFsync):
    """What the bridge's log does (src/agent/store/log-tail.ts): the same line written over spaces
    the file already holds, then fdatasync; no size changes, so the sync writes the data alone.
    Spaces for 64 Ki lines are written (and synced) first, and refilled when used up."""

    SPACES = 64 * 1024

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(folder / "overwrite.jsonl", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.line = b'\n{"type":"turn/end","seq":7,"time":1790000000000,"data":{"turn":1,"reason":{"kind":"completed"},"usage":{}}}'
        self.at = 0
        self.size = 0

    def latencies(self, count: int) -> List[float]:
        if self.at + count * len(self.line) >= self.size:
            # Untimed: the bridge grows its log once in many turns (an eighth of it, 16–256 KiB).
            self.size = self.at + (count + self.SPACES) * len(self.line) + 1
            os.pwrite(self.fd, b" " * (self.size - 1 - self.at) + b"\n", self.at)
            os.fsync(self.fd)
        out: List[float] = []
        for _ in range(count):
            start = perf_counter()
            os.pwrite(self.fd, self.line, self.at)
            os.fdatasync(self.fd)
            out.append(perf_counter() - start)
            self.at += len(self.line)
        return out


def disk_writes(folder: Path) -> Optional[int]:
    """Write requests completed so far on the block device holding `folder` (every process's:
    /sys/dev/block/MAJ:MIN/stat), or None where there is none (tmpfs) or it cannot be read."""
    dev = os.stat(folder).st_dev
    try:
        with open(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat") as f:
            return int(f.read().split()[4])
    except (OSError, IndexError, ValueError):
        return None


# The raw echo's p50 above which a round counts as slow whatever its CPU: well above what the
# echo takes while the development machine is fast, well below what it takes in either slow state
# (the figures: bench/README.md, issue 34, round 13).
SLOW_ECHO_P50 = 30e-6


def by_state(res: Result, samples: Dict[str, List[List[float]]], echo_cpu: List[float]) -> None:
    """The bridge's ratios to ACP's agent by the machine's state, round by round. A round's state
    is read from the raw echo's block in it. Slow: the echo waits more than twice what it works
    (wake-ups are slow: an idle machine's halted CPUs), or its p50 is over `SLOW_ECHO_P50` (its
    CPU is slow: other processes share it). There a server that writes part of its answer early
    (ACP's agent writes its notification before its response) overlaps the client's wake-up with
    its own work; where the machine is fast that early write is one more wake-up to pay."""
    states: Dict[str, List[int]] = {"slow": [], "fast": []}
    for r, cpu in enumerate(echo_cpu):
        echo50 = percentile(samples["echo"][r], 50)
        states["slow" if echo50 > 2 * cpu or echo50 > SLOW_ECHO_P50 else "fast"].append(r)
    for state, rounds in states.items():
        if not rounds:
            continue
        ratio = lambda key, p: median([percentile(samples[key][r], p) / percentile(samples["acp"][r], p) for r in rounds])
        echo50 = median([percentile(samples["echo"][r], 50) for r in rounds])
        cpu = median([echo_cpu[r] for r in rounds])
        res.row(f"{state} rounds ({len(rounds)} of {len(echo_cpu)}; echo p50 {echo50 * 1e6:.0f} µs, its CPU {cpu * 1e6:.0f} µs a request): "
                "the bridge against ACP, median of the rounds' ratios", "", "", f"{ratio('bridge', 50):.2f}x", f"{ratio('bridge', 99):.2f}x")


def jsonrpc(rid: int, method: str, params: Dict[str, object]) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def run(ctx: Context) -> Result:
    warmup, rounds, block = ctx.count(COUNTS["warmup"]), ctx.count(COUNTS["rounds"]), ctx.count(COUNTS["block"])
    tmp = ctx.tmp / "peers"
    tmp.mkdir()
    model = write_script(tmp, "one-chunk.json", {"steps": [{"text": "hi"}]})
    env = bridge_env(tmp)
    bridge_init = [initialize_request(str(tmp), model)]
    acp_prompt = lambda rid: jsonrpc(rid, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]})
    mcp_call = lambda rid: jsonrpc(rid, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    bridge_prompt = lambda rid: prompt_request(rid, "bench", "hi")
    node = ctx.node
    names = {
        "echo": "floor: raw Node NDJSON echo",
        "acp": "ACP TypeScript SDK agent, session/prompt (1 session/update)",
        "mcp": "MCP TypeScript SDK server, tools/call echo",
        "bridge": "bridge session/prompt, --no-session-log (6 session.event)",
        "log": "bridge session/prompt, session log on (default)",
        "fsync": "floor: one append + fsync of a line, same folder",
        "overwrite": "the same line over preallocated spaces + fdatasync (what the log does)",
        "echo-fsync": "floor: raw Node NDJSON echo, one append + fsync before each response",
    }
    peers: Dict[str, object] = {
        "echo": RawPeer([node, str(BENCH / "echo_server.mjs")], bridge_prompt, []),
        "acp": RawPeer([node, str(BENCH / "acp_agent.mjs")], acp_prompt, [
            jsonrpc(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
            jsonrpc(2, "session/new", {"cwd": str(tmp), "mcpServers": []})]),
        "mcp": RawPeer([node, str(BENCH / "mcp_server.mjs")], mcp_call, [
            jsonrpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
            line({"jsonrpc": "2.0", "method": "notifications/initialized"})]),
        "bridge": RawPeer([str(ctx.bin), "--stdio", "--no-session-log"], bridge_prompt, bridge_init, env),
        "log": RawPeer([str(ctx.bin), "--stdio"], bridge_prompt, bridge_init, env),
        "fsync": AppendFsync(tmp / "sessions"),
        "overwrite": OverwriteSync(tmp / "sessions"),
        "echo-fsync": RawPeer([node, str(BENCH / "echo_server.mjs"), "--append-fsync", str(tmp / "sessions" / "echo.jsonl")], bridge_prompt, []),
    }
    samples: Dict[str, List[List[float]]] = {key: [] for key in peers}
    # Disk writes a durable request, by target: what a sync writes besides the line (round 16).
    synced = ("log", "fsync", "overwrite", "echo-fsync")
    writes: Dict[str, int] = {key: 0 for key in synced}
    echo_cpu: List[float] = []  # the echo's CPU a request, block by block (the machine's state)
    try:
        for peer in peers.values():
            peer.latencies(warmup)  # type: ignore[attr-defined]
        for r in range(rounds):
            # The order is reversed every other round: a block starts while the block before it
            # may still have its server's collector and compiler threads busy, which a fixed order
            # would charge to the same target every round.
            order = list(peers.items())
            for key, peer in (order if r % 2 == 0 else order[::-1]):
                cpu = cpu_seconds(peer.proc.pid) if key == "echo" else 0.0  # type: ignore[attr-defined]
                before = disk_writes(tmp) if key in synced else None
                samples[key].append(peer.latencies(block))  # type: ignore[attr-defined]
                after = disk_writes(tmp) if before is not None else None
                if before is not None and after is not None:
                    writes[key] += after - before
                if key == "echo":
                    echo_cpu.append((cpu_seconds(peer.proc.pid) - cpu) / block)  # type: ignore[attr-defined]
    finally:
        for peer in peers.values():
            peer.close()  # type: ignore[attr-defined]
    # Per-turn cost against the session's length: the history and the events kept grow with it.
    window, late = ctx.count(COUNTS["window"]), ctx.count(COUNTS["late"])
    long_peer = RawPeer([str(ctx.bin), "--stdio", "--no-session-log"], bridge_prompt, bridge_init, env)
    try:
        long = long_session(long_peer, warmup, window, late)
    finally:
        long_peer.close()
    p50 = {key: median([percentile(s, 50) for s in runs]) for key, runs in samples.items()}
    p99 = {key: median([percentile(s, 99) for s in runs]) for key, runs in samples.items()}
    res = Result(f"Round trip against the protocol SDKs: one raw client, {rounds} interleaved blocks of {block:,} after {warmup:,} "
                 "warm-up requests (medians of the blocks' percentiles)", ["target", "p50 µs", "p99 µs", "p50 / ACP", "p99 / ACP"])
    for key, name in names.items():
        res.row(name, f"{p50[key] * 1e6:.0f}", f"{p99[key] * 1e6:.0f}",
                *([f"{p50[key] / p50['acp']:.2f}x", f"{p99[key] / p99['acp']:.2f}x"] if key not in ("fsync", "overwrite", "echo-fsync") else ["", ""]))
    by_state(res, samples, echo_cpu)
    r50, r99 = p50["bridge"] / p50["acp"], p99["bridge"] / p99["acp"]
    res.goal("round trip: bridge prompt p50 <= ACP SDK agent p50 (--no-session-log)", f"{r50:.2f}x ({p50['bridge'] * 1e6:.0f} vs {p50['acp'] * 1e6:.0f} µs)", r50 <= 1.0)
    res.goal("round trip: bridge prompt p99 <= ACP SDK agent p99 (--no-session-log)", f"{r99:.2f}x ({p99['bridge'] * 1e6:.0f} vs {p99['acp'] * 1e6:.0f} µs)", r99 <= 1.0)
    early_at, late_at = f"{warmup + 1:,}–{warmup + window:,}", f"{late + 1:,}–{late + window:,}"
    for name, at in (("early", early_at), ("late", late_at)):
        lp50, lcpu, rss = long[name]
        res.row(f"bridge, one session, turns {at}: CPU {lcpu * 1e6:.0f} µs a turn, RSS {rss // 1024} MB", f"{lp50 * 1e6:.0f}", "", "", "")
    cpu_ratio, p50_ratio = long["late"][1] / long["early"][1], long["late"][0] / long["early"][0]
    # Judged on CPU: the two windows are measured one after the other, not interleaved, so their
    # p50s carry whatever the machine did meanwhile (shown, not judged).
    res.goal(f"long session: turns {late_at} / turns {early_at}, CPU a turn <= 1.25x",
             f"CPU {cpu_ratio:.2f}x (p50 {p50_ratio:.2f}x)", cpu_ratio <= 1.25)
    extra = p50["log"] - p50["bridge"]
    ratio = extra / p50["fsync"]
    res.goal("round trip: session log's extra p50 <= 1.5x one append + fsync", f"{ratio:.2f}x (+{extra * 1e6:.0f} vs {p50['fsync'] * 1e6:.0f} µs)", ratio <= 1.5)
    res.notes.append("The client writes a request and reads lines to its response, parsing only the response (a notification's "
                     "parse is the client's cost). All bridge prompts go to one session; with the log on, each turn ends with an fsync.")
    res.notes.append("The long-session rows are one more bridge (--no-session-log), one session, alone: CPU is every thread's "
                     "(schedstat), so JIT and collector threads count; RSS grows with the events a session keeps in memory.")
    res.notes.append("The rows by state split the rounds by the raw echo's block in each: slow where its p50 is over twice its CPU a "
                     f"request (slow wake-ups) or over {SLOW_ECHO_P50 * 1e6:.0f} µs (a slow CPU). Run to run the machine moves between the "
                     "states, and the bridge's ratio to ACP's agent with it; the rows pair each round's bridge and ACP blocks, the "
                     "goals above take each target's median block (bench/README.md, issue 34, round 13).")
    res.notes.append("The fsync floor is timed in the client's process (os.write + os.fsync): what syncing an appended line costs on this "
                     f"disk. The log writes its lines over spaces it keeps ahead (log-tail.ts), so its sync has no size to write: "
                     f"{p50['overwrite'] / p50['fsync']:.2f}x the append's here (bench/README.md, round 15).")
    if disk_writes(tmp) is not None:
        each = {key: writes[key] / (rounds * block) for key in synced}
        res.notes.append(f"Disk write requests a request on the session folder's device (/sys/dev/block, every process's, flushes "
                         f"included): the bridge with its log {each['log']:.2f}, one append + fsync {each['fsync']:.2f}, the line over "
                         f"spaces + fdatasync {each['overwrite']:.2f}, the echo's append + fsync {each['echo-fsync']:.2f}. A turn that "
                         "made and removed its lock's name in the session folder wrote one more: the block of inodes the log shares "
                         "with the folder (bench/README.md, round 16).")
    echo_extra = p50["echo-fsync"] - p50["echo"]
    res.notes.append(f"The same append + fsync in a server, across the pipe: the echo's extra p50 is {echo_extra / p50['fsync']:.2f}x the floor "
                     f"(+{echo_extra * 1e6:.0f} µs), the bridge's {ratio:.2f}x: the client sleeps through the server's fsync and is woken "
                     "after it, which the in-process floor does not pay (bench/README.md, the durable turn).")
    return res

"""spawn -> `initialize` response: bin/harness-bridge and the plain bundle under node, against
spawn -> exit of `node -e 0`; with the environment as it is, again without NODE_EXTRA_CA_CERTS
when it is set (Node loads it at every start), and with bubblewrap switched off
(HARNESS_BWRAP=off: `initialize` then awaits the Landlock probe)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Callable, Dict, List, Tuple

from common import Context, Count, Result, bridge_env, initialize_request, median

COUNTS = {"runs": Count(quick=3, full=21)}


def spawn_to_exit(cmd: List[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def spawn_to_initialize(cmd: List[str], env: Dict[str, str], request: bytes) -> float:
    # A key in the environment goes to the bridge as the SDK passes it: on a pipe, written and
    # closed before the spawn, named by --secrets-fd (python/sdk/.../_internal/process.py).
    key = env.get("DEEPSEEK_API_KEY")
    fds: Tuple[int, ...] = ()
    if key:
        env = {k: v for k, v in env.items() if k != "DEEPSEEK_API_KEY"}
        read_end, write_end = os.pipe()
        os.write(write_end, json.dumps({"DEEPSEEK_API_KEY": key}).encode())
        os.close(write_end)
        cmd, fds = cmd + ["--secrets-fd", str(read_end)], (read_end,)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=fds)
    for fd in fds:
        os.close(fd)
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


def run(ctx: Context) -> Result:
    runs = ctx.count(COUNTS["runs"])
    tmp = ctx.tmp
    res = Result("Cold start: spawn -> initialize response (median)", ["environment", "what", "ms", "ratio vs node -e 0"])
    plain_request = initialize_request(str(tmp), "demo")
    keyed_request = initialize_request(str(tmp), "deepseek-chat", provider="deepseek")
    envs = [("as is", bridge_env(tmp))]
    without = bridge_env(tmp)
    if "NODE_EXTRA_CA_CERTS" in os.environ:
        without.pop("NODE_EXTRA_CA_CERTS")
        envs[0] = (f"NODE_EXTRA_CA_CERTS={os.environ['NODE_EXTRA_CA_CERTS']}", envs[0][1])
        envs.append(("without NODE_EXTRA_CA_CERTS", without))
    # Where bubblewrap is absent (most containers), `initialize` reports the Landlock probe's
    # answer: the same start without NODE_EXTRA_CA_CERTS, bubblewrap switched off.
    landlock = dict(without, HARNESS_BWRAP="off")
    envs.append(("HARNESS_BWRAP=off (Landlock)" + (", without NODE_EXTRA_CA_CERTS" if len(envs) > 1 else ""), landlock))
    # The SDK's start with a key: the key on a pipe (--secrets-fd), the provider DeepSeek's.
    keyed = dict(without, DEEPSEEK_API_KEY="sk-bench-not-a-key")
    envs.append(("a key on --secrets-fd, provider deepseek" + (", without NODE_EXTRA_CA_CERTS" if len(envs) > 2 else ""), keyed))
    cases: List[Tuple[str, Callable[[Dict[str, str]], float]]] = [
        ("node -e 0 (spawn -> exit)", lambda env: spawn_to_exit([ctx.node, "-e", "0"], env)),
        ("bin/harness-bridge", lambda env: spawn_to_initialize([str(ctx.bin), "--stdio"], env, request)),
        ("node build/harness-bridge.cjs", lambda env: spawn_to_initialize([ctx.node, str(ctx.bundle), "--stdio"], env, request)),
    ]
    ratios: List[Tuple[float, float]] = []  # (ratio, ms over node -e 0) per environment, in order
    for label, env in envs:
        # The cases read `request` when called: this environment's.
        request = keyed_request if env is keyed else plain_request
        times: Dict[str, List[float]] = {name: [] for name, _ in cases}
        for name, fn in cases:  # warm the page cache
            fn(env)
        for _ in range(runs):
            for name, fn in cases:
                times[name].append(fn(env))
        base = median(times[cases[0][0]])
        for name, _ in cases:
            m = median(times[name])
            res.row(label, name, f"{m * 1000:.1f}", f"{m / base:.2f}x")
        ratios.append((median(times["bin/harness-bridge"]) / base, (median(times["bin/harness-bridge"]) - base) * 1000))
    res.goal("cold start: bin within 1.15x of node -e 0 (environment as is)", f"{ratios[0][0]:.2f}x", ratios[0][0] <= 1.15)
    res.goal("cold start without NODE_EXTRA_CA_CERTS: within 1.10x of node -e 0", f"{ratios[-3][0]:.2f}x, {ratios[-3][1]:+.1f} ms", ratios[-3][0] <= 1.10)
    res.goal("cold start, bubblewrap switched off (the Landlock probe): within 1.10x of node -e 0", f"{ratios[-2][0]:.2f}x, {ratios[-2][1]:+.1f} ms", ratios[-2][0] <= 1.10)
    res.goal("cold start with a key on --secrets-fd, as the SDK starts it (informational)", f"{ratios[-1][0]:.2f}x, {ratios[-1][1]:+.1f} ms", None)
    res.notes.append(f"{runs} interleaved runs per row after one warm-up; the bridge runs with its default flags (session log on, in a temp root).")
    return res

"""SIGKILL of the bridge -> TransportClosedError in the SDK caller blocked in Session.run,
against a raw reader's EOF on the same kill; and the other way, SIGKILL of a client process
during a hanging turn -> the bridge gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

from common import Context, Count, Result, bridge_env, initialize_request, median, prompt_request, write_script
from deepseek_harness import DeepSeekHarness, TransportClosedError

COUNTS = {"kills": Count(quick=2, full=15)}


def sdk_death_delay(ctx: Context, model: str) -> float:
    tmp = ctx.tmp
    harness = DeepSeekHarness(provider="scripted", model=model, cwd=str(tmp), session_root=str(tmp / "sessions"), bridge_bin=ctx.bin)
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
    at: float = outcome["at"]
    return at - killed


def raw_death_delay(ctx: Context, model: str) -> float:
    tmp = ctx.tmp
    proc = subprocess.Popen([str(ctx.bin), "--stdio"], env=bridge_env(tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
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


def run(ctx: Context) -> Result:
    kills = ctx.count(COUNTS["kills"])
    model = write_script(ctx.tmp, "hang.json", {"steps": [{"text": "x", "hang": True}]})
    delays: Dict[str, List[float]] = {"raw": [], "sdk": []}
    for _ in range(kills):
        delays["raw"].append(raw_death_delay(ctx, model))
        delays["sdk"].append(sdk_death_delay(ctx, model))
    res = Result(f"Bridge death: SIGKILL -> error in the caller ({kills} kills each)", ["caller", "median ms", "max ms", "ratio vs raw EOF (median)"])
    base = median(delays["raw"])
    res.row("floor: raw reader sees EOF", f"{base * 1000:.2f}", f"{max(delays['raw']) * 1000:.2f}", "1.00x")
    sdk = median(delays["sdk"])
    res.row("SDK: Session.run raises TransportClosedError", f"{sdk * 1000:.2f}", f"{max(delays['sdk']) * 1000:.2f}", f"{sdk / base:.1f}x")
    res.goal("death: SIGKILL -> TransportClosedError < 100 ms (max)", f"{max(delays['sdk']) * 1000:.1f} ms", max(delays["sdk"]) < 0.1)
    gone = [client_gone_delay(ctx, model) for _ in range(kills)]
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


def client_gone_delay(ctx: Context, model: str) -> float:
    """A client process spawns the bridge, starts a turn that hangs, and is SIGKILLed: seconds until the bridge is gone."""
    requests = initialize_request(str(ctx.tmp), model) + prompt_request(2, "gone")
    client = subprocess.Popen([sys.executable, "-c", CLIENT_GONE_SCRIPT, str(ctx.bin), "--stdio", "--no-session-log"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=bridge_env(ctx.tmp))
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

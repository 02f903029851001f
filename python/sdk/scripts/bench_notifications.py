#!/usr/bin/env python3
"""Notification throughput: the SDK's callback path against a raw ``json.loads`` reader.

    .venv/bin/python python/sdk/scripts/bench_notifications.py [--source replay|real] [--chunks 200000]
        [--api callback|async|stream|async-stream|run]

Both readers consume the same turn of N ``assistant/chunk`` notifications followed by the
prompt response:

* raw: ``readline()`` + ``json.loads`` on the bridge's stdout, counting notifications;
* sdk: by ``--api``: ``callback`` (default, the goal's measure):
  ``HarnessClient.session_prompt(..., on_notification=count)``; ``async``: the same through
  ``AsyncDeepSeekHarness.run(..., on_notification=count)``; ``stream`` / ``async-stream``:
  iterating ``Session.stream`` / ``AsyncSession.stream`` (typed pydantic events, one per
  notification: slower by design, reported for information); ``run``:
  ``DeepSeekHarness.run`` without a callback, counting the result's notifications (it keeps
  every one).

``--source replay`` (default) serves a pre-rendered stream from a tiny Python stand-in, so the
numbers measure the readers, not the producer; ``--source real`` drives bin/harness-bridge
with the scripted provider (``repeat``), where the bridge itself may be the bottleneck.
The goal is sdk / raw >= 0.7. Prints one line per run and the ratio of the best runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

SDK = Path(__file__).resolve().parents[1]
REPO = SDK.parents[1]
sys.path.insert(0, str(SDK / "src"))

import asyncio  # noqa: E402

from deepseek_harness import AsyncDeepSeekHarness, DeepSeekHarness, HarnessClient, TurnResult  # noqa: E402

REPLAY = textwrap.dedent(
    r'''
    import json, sys
    n = int(sys.argv[sys.argv.index("--chunks") + 1])
    out = sys.stdout.buffer
    line = json.dumps({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": "bench", "event": {
        "type": "assistant/chunk", "seq": 0, "time": 1700000000000,
        "data": {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "text": "0123456789abcdef"}}}}}, separators=(",", ":")).encode() + b"\n"
    blob = line * n
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        if msg["method"] == "initialize":
            result = {"serverInfo": {"name": "harness-bridge", "version": "bench"}, "protocolVersion": 1, "providers": ["scripted"]}
        elif msg["method"] == "session/prompt":
            out.write(blob)
            result = {"status": "ok", "reason": {"kind": "completed"}}
        elif msg["method"] == "shutdown":
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}).encode() + b"\n")
            out.flush()
            break
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n")
        out.flush()
    '''
)


def command(source: str, chunks: int, tmp: Path) -> list:
    if source == "replay":
        script = tmp / "replay_bridge.py"
        script.write_text(REPLAY)
        return [sys.executable, str(script), "--stdio", "--chunks", str(chunks)]
    return [str(REPO / "bin" / "harness-bridge"), "--stdio", "--no-session-log"]


def model(source: str, chunks: int, tmp: Path) -> str:
    path = tmp / "bench.json"
    path.write_text(json.dumps({"steps": [{"text": "0123456789abcdef", "chunkSize": 16, "repeat": chunks}]}))
    return str(path)


def raw_run(cmd: list, model_name: str, cwd: str) -> tuple:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    send = lambda obj: (proc.stdin.write(json.dumps(obj).encode() + b"\n"), proc.stdin.flush())  # noqa: E731
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"cwd": cwd, "provider": "scripted", "model": model_name}})
    readline = proc.stdout.readline
    loads = json.loads
    loads(readline())
    start = time.perf_counter()
    send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
          "params": {"sessionId": "bench", "contentBlocks": [{"type": "text", "text": "go"}]}})
    count = 0
    while True:
        msg = loads(readline())
        if "method" in msg:
            count += 1
        elif msg.get("id") == 2:
            break
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.kill()
    proc.wait()
    return count, elapsed


def sdk_run(cmd: list, model_name: str, cwd: str) -> tuple:
    client = HarnessClient(cmd[0], extra_args=cmd[2:])
    client.command = lambda: list(cmd)  # type: ignore[method-assign]  # the replay stand-in runs under python
    client.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the replay stand-in reports version "bench"
        client.initialize(cwd, "scripted", model_name)
    count = 0

    def on_notification(n):
        nonlocal count
        count += 1

    start = time.perf_counter()
    client.session_prompt("bench", "go", on_notification)
    elapsed = time.perf_counter() - start
    client.close()
    return count, elapsed


def _harness(cls, cmd: list, model_name: str, cwd: str):
    h = cls(provider="scripted", model=model_name, cwd=cwd, bridge_bin=cmd[0])
    client = h.client
    client.command = lambda: list(cmd)  # type: ignore[method-assign]
    return h


def _started(h) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h.start()


def stream_run(cmd: list, model_name: str, cwd: str) -> tuple:
    h = _harness(DeepSeekHarness, cmd, model_name, cwd)
    _started(h)
    start = time.perf_counter()
    count = sum(1 for item in h.stream("go", session_id="bench") if not isinstance(item, TurnResult))
    elapsed = time.perf_counter() - start
    h.close()
    return count, elapsed


def result_run(cmd: list, model_name: str, cwd: str) -> tuple:
    h = _harness(DeepSeekHarness, cmd, model_name, cwd)
    _started(h)
    start = time.perf_counter()
    result = h.run("go", session_id="bench")
    elapsed = time.perf_counter() - start
    h.close()
    return len(result.notifications), elapsed


def async_run(cmd: list, model_name: str, cwd: str, stream: bool = False) -> tuple:
    async def main() -> tuple:
        h = _harness(AsyncDeepSeekHarness, cmd, model_name, cwd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await h.start()
        count = 0

        def on_notification(n):
            nonlocal count
            count += 1

        start = time.perf_counter()
        if stream:
            async for item in h.stream("go", session_id="bench"):
                count += not isinstance(item, TurnResult)
        else:
            await h.run("go", session_id="bench", on_notification=on_notification)
        elapsed = time.perf_counter() - start
        await h.close()
        return count, elapsed

    return asyncio.run(main())


APIS = {
    "callback": sdk_run,
    "async": async_run,
    "stream": stream_run,
    "async-stream": lambda cmd, model_name, cwd: async_run(cmd, model_name, cwd, stream=True),
    "run": result_run,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=["replay", "real"], default="replay")
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--api", choices=sorted(APIS), default="callback")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        cmd = command(args.source, args.chunks, tmp)
        model_name = model(args.source, args.chunks, tmp)
        best = {"raw": 0.0, "sdk": 0.0}
        for i in range(args.runs):
            for name, fn in (("raw", raw_run), ("sdk", APIS[args.api])):
                count, elapsed = fn(cmd, model_name, t)
                rate = count / elapsed
                best[name] = max(best[name], rate)
                print(f"run {i + 1} {name}: {count} notifications in {elapsed:.3f} s = {rate:,.0f}/s")
        ratio = best["sdk"] / best["raw"]
        if args.api == "callback":
            print(f"sdk/raw throughput (best runs): {ratio:.2f} (goal >= 0.7)")
        else:
            print(f"sdk ({args.api}) / raw throughput (best runs): {ratio:.2f} (for information; the goal is for callback)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

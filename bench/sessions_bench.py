"""The long-session sections of bench/run.py (issue 20, item 4): `resume` and `session-list`.

resume        spawn -> the first prompt response of a session whose log holds N events (1k, 10k,
              100k, 1M; a realistic mix: user messages, tool-call steps, tool results), against
              a Node process reading the same file raw (bytes only) and reading it and
              JSON-parsing every line; and a new session (no log) for the fixed cost. Then the
              same log once compacted at its end: the resume must not depend on what came before.
session-list  `session/list` over 10 000 sessions, inside a running bridge: the first listing
              (no meta files: each log is scanned) and later ones (meta files), against a Node
              process's readdir + stat of the same folder.

The generated logs are what the bridge writes (one JSON object per line, keys type, seq, time,
data), put straight into the session root's workspace folder.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from deepseek_harness._internal.sessions import _workspace_folder

NODE_READ = "require('fs').readFileSync(process.argv[1])"
NODE_READ_PARSE = ("const t=require('fs').readFileSync(process.argv[1],'utf8');let n=0;"
                   "for(const l of t.split('\\n'))if(l)n+=JSON.parse(l).seq>0?1:0")
NODE_READDIR_STAT = ("const fs=require('fs'),p=require('path'),d=process.argv[1];const t=process.hrtime.bigint();"
                     "let n=0;for(const f of fs.readdirSync(d))n+=fs.statSync(p.join(d,f)).size>0?1:0;"
                     "console.log(Number(process.hrtime.bigint()-t)/1e9)")
TIME0 = 1_700_000_000_000


def _line(obj: Dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def write_log(path: Path, session_id: str, events: int, t0: int = TIME0) -> int:
    """A log of `events` durable events in turns of 11 (2 tool-call steps and a final answer); returns its size."""
    out: List[str] = [_line({"type": "session-header", "version": 1, "sessionId": session_id, "workspace": "/bench",
                             "createdAt": t0, "provider": "scripted", "model": "bench"})]
    seq = written = turn = 0

    def ev(kind: str, data: Dict[str, Any]) -> None:
        nonlocal seq, written
        seq += 1
        written += 1
        out.append(_line({"type": kind, "seq": seq, "time": t0 + seq, "data": data}))

    while written < events:
        turn += 1
        ev("user/message", {"id": f"msg_{turn}", "content": [{"type": "text", "text": f"look at src/f{turn}.ts and say what it does"}]})
        ev("turn/start", {"turn": turn})
        for step in (1, 2):
            ev("step/start", {"turn": turn, "step": step})
            seq += 5  # the live-only chunks leave gaps
            ev("assistant/message", {"id": f"a{turn}.{step}", "turn": turn, "step": step, "finishReason": "tool-calls",
                                     "content": [{"type": "text", "text": "Let me read it."},
                                                 {"type": "tool-call", "id": f"c{turn}.{step}", "name": "read_file", "arguments": {"path": f"src/f{turn}.ts"}}],
                                     "usage": {"inputTokens": 1000, "outputTokens": 20}})
            ev("tool/result", {"callId": f"c{turn}.{step}", "name": "read_file", "content": [{"type": "text", "text": "export const x = 1;\n" * 8}],
                               "isError": False, "durationMs": 1})
        ev("step/start", {"turn": turn, "step": 3})
        seq += 5
        ev("assistant/message", {"id": f"a{turn}.3", "turn": turn, "step": 3, "finishReason": "stop",
                                 "content": [{"type": "text", "text": "It exports a constant."}], "usage": {"inputTokens": 1200, "outputTokens": 5}})
        ev("turn/end", {"turn": turn, "reason": {"kind": "completed"}, "usage": {"inputTokens": 3200, "outputTokens": 45}})
    data = "".join(out[: events + 1])
    path.write_text(data)
    return len(data.encode())


def append_compaction(path: Path) -> None:
    """Appends a `context/compacted` that keeps the history from the log's last assistant message
    on, as the bridge records one: a resume then starts reading at that message's line."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 64 * 1024))
        tail = [json.loads(line) for line in f.read().splitlines()[1:]]
    last = tail[-1]
    kept = next(e for e in reversed(tail) if e.get("type") == "assistant/message")
    turn = max(e["data"]["turn"] for e in tail if e.get("type") == "turn/start")
    with path.open("a") as f:
        f.write(_line({"type": "context/compacted", "seq": last["seq"] + 1, "time": last["time"] + 1,
                       "data": {"summary": "SUMMARY: the agent read source files one by one and said what each exports.",
                                "tokensBefore": 900_000, "tokensAfter": 2_000, "keptFromSeq": kept["seq"], "turn": turn,
                                "trigger": "auto"}}))


def _request(rid: int, method: str, params: Dict[str, Any]) -> bytes:
    return _line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


def _read_until(proc: "subprocess.Popen[bytes]", rid: int) -> Dict[str, Any]:
    assert proc.stdout
    while True:
        msg = json.loads(proc.stdout.readline())
        if msg.get("id") == rid:
            if "error" in msg:
                raise RuntimeError(f"request {rid} failed: {msg['error']}")
            return msg


def spawn_to_first_response(bin_path: Path, root: Path, workspace: Path, session_id: str) -> float:
    """spawn -> initialize and a prompt of `session_id`, written at once -> the prompt's response."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(bin_path), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin
    proc.stdin.write(_request(1, "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "turn.json"})
                     + _request(2, "session/prompt", {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": "go"}]}))
    proc.stdin.flush()
    answer = _read_until(proc, 2)
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait()
    if answer["result"]["status"] != "ok":
        raise RuntimeError(f"resume failed: {answer}")
    return elapsed


def node_run(code: str, arg: str) -> float:
    start = time.perf_counter()
    subprocess.run(["node", "-e", code, arg], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _median(xs: List[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def bench_resume(quick: bool, tmp: Path, result_cls: Callable[..., Any], bin_path: Path) -> Any:
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000, 1_000_000]
    workspace = tmp / "resume-ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "turn.json").write_text(json.dumps({"steps": [{"text": "ok"}]}))
    root = tmp / "resume-root"
    folder = root / _workspace_folder(str(workspace))
    folder.mkdir(parents=True, exist_ok=True)
    res = result_cls("Resume: spawn -> first prompt response of a session with N logged events (median)",
                     ["events", "log MB", "raw read ms", "read+parse ms", "resume ms", "vs raw read", "vs read+parse", "µs/event",
                      "after a compaction ms"])
    spawn_to_first_response(bin_path, root, workspace, "fresh-warm-up")
    fresh = [spawn_to_first_response(bin_path, root, workspace, f"fresh{i}") for i in range(3 if quick else 7)]
    base = _median(fresh)
    res.row("0 (new session)", "0", "", "", f"{base * 1000:.0f}", "", "", "", "")
    compacted: Dict[int, float] = {}
    marginal: Dict[int, float] = {}
    ratios: Dict[int, Tuple[float, float]] = {}
    for n in sizes:
        log = folder / f"n{n}.jsonl"
        size = write_log(log, f"n{n}", n)
        runs = 1 if quick else (3 if n >= 1_000_000 else 5)
        times: Dict[str, List[float]] = {"raw": [], "parse": [], "resume": []}
        # One warm-up of each (the page cache), then interleaved runs. Each resume appends its
        # turn (7 events) to the log: negligible beside N.
        node_run(NODE_READ, str(log))
        spawn_to_first_response(bin_path, root, workspace, f"n{n}")
        for _ in range(runs):
            times["raw"].append(node_run(NODE_READ, str(log)))
            times["parse"].append(node_run(NODE_READ_PARSE, str(log)))
            times["resume"].append(spawn_to_first_response(bin_path, root, workspace, f"n{n}"))
        raw, parse, resume = (_median(times[k]) for k in ("raw", "parse", "resume"))
        # The same log once compacted at its end: the resume reads only the kept history.
        append_compaction(log)
        spawn_to_first_response(bin_path, root, workspace, f"n{n}")
        compacted[n] = _median([spawn_to_first_response(bin_path, root, workspace, f"n{n}") for _ in range(runs)])
        marginal[n] = (resume - base) / n
        ratios[n] = (resume / raw, resume / parse)
        res.row(f"{n:,}", f"{size / 1e6:.1f}", f"{raw * 1000:.0f}", f"{parse * 1000:.0f}", f"{resume * 1000:.0f}",
                f"{resume / raw:.2f}x", f"{resume / parse:.2f}x", f"{marginal[n] * 1e6:.2f}", f"{compacted[n] * 1000:.0f}")
        log.unlink()
    top, below = sizes[-1], sizes[-2]
    res.goal(f"resume of {top:,} events within 3x a raw read + JSON.parse of every line (node)", f"{ratios[top][1]:.2f}x", ratios[top][1] <= 3)
    res.goal(f"resume of {top:,} events against a bytes-only read (informational)", f"{ratios[top][0]:.2f}x", None)
    growth = marginal[top] / marginal[below]
    res.goal(f"resume is linear: cost per event at {top:,} within 1.5x of that at {below:,}", f"{growth:.2f}x", growth <= 1.5)
    after = compacted[top] / base
    res.goal(f"resume of {top:,} events after a compaction within 1.5x of a new session (independent of the history before it)",
             f"{after:.2f}x", after <= 1.5)
    res.notes.append("resume = spawn, initialize and a prompt written at once, until the prompt's response (scripted model); "
                     "raw read = `node -e readFileSync(file)` spawn -> exit; read+parse = the same plus JSON.parse of every line. "
                     "µs/event = (resume - new session) / N.")
    res.notes.append("Resuming must parse every event of the history the model is sent, so its floor is the read+parse "
                     "column. After a compaction only the header, the kept history and what follows are read "
                     "(src/agent/store/resume.ts): 'after a compaction' is the same log with a context/compacted "
                     "appended that keeps the history from its last assistant message on.")
    return res


def bench_session_list(quick: bool, tmp: Path, result_cls: Callable[..., Any], bin_path: Path) -> Any:
    n = 500 if quick else 10_000
    runs = 1 if quick else 5
    workspace = tmp / "list-ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "turn.json").write_text(json.dumps({"steps": [{"text": "ok"}]}))
    root = tmp / "list-root"
    folder = root / _workspace_folder(str(workspace))
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        write_log(folder / f"s{i}.jsonl", f"s{i}", 11, TIME0 + i * 1000)
    res = result_cls(f"session/list over {n:,} sessions, in a running bridge (median of {runs})",
                     ["listing", "ms", f"vs readdir+stat of the folder"])
    proc = subprocess.Popen([str(bin_path), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin
    rid = 1
    proc.stdin.write(_request(rid, "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "turn.json"}))
    proc.stdin.flush()
    _read_until(proc, rid)

    def listing() -> float:
        nonlocal rid
        rid += 1
        start = time.perf_counter()
        proc.stdin.write(_request(rid, "session/list", {}))  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        answer = _read_until(proc, rid)
        elapsed = time.perf_counter() - start
        if len(answer["result"]["sessions"]) != n:
            raise RuntimeError(f"session/list gave {len(answer['result']['sessions'])} sessions, not {n}")
        return elapsed

    def readdir_stat() -> float:
        out = subprocess.run(["node", "-e", NODE_READDIR_STAT, str(folder)], check=True, capture_output=True, text=True).stdout
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
    b = _median(base)
    for label, xs in (("first (no meta files: every log scanned, metas written)", cold), ("later (meta files)", warm)):
        m = _median(xs)
        res.row(label, f"{m * 1000:.1f}", f"{m / b:.2f}x")
    res.row("node readdir + stat of the folder (in process)", f"{b * 1000:.1f}", "1.00x")
    ratio = _median(warm) / b
    res.goal(f"session/list of {n:,} sessions within 5x a readdir + stat of their folder", f"{ratio:.2f}x, {_median(warm) * 1000:.0f} ms", ratio <= 5)
    res.goal(f"session/list of {n:,} sessions without meta files (informational)", f"{_median(cold) / b:.2f}x, {_median(cold) * 1000:.0f} ms", None)
    res.notes.append("Each session: a header and one 11-event turn. The bridge's time is request written -> response read "
                     "(JSON of the whole answer included); the folder holds the logs and, after the first listing, a meta file each.")
    return res

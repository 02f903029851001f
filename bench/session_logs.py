"""Session logs for the `resume` and `session-list` sections, generated as the bridge writes
them (one JSON object per line, keys type, seq, time, data) and put straight into the session
root's workspace folder; and the raw JSON-RPC those sections speak to a bridge of their own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

from common import line

__all__ = ["TIME0", "append_compaction", "log_folder", "read_until", "request", "write_log"]

TIME0 = 1_700_000_000_000


def log_folder(bin_path: Path, tmp: Path, name: str) -> Tuple[Path, Path, Path]:
    """A workspace `tmp/<name>-ws` whose `turn.json` scripts a one-step turn, a session root
    `tmp/<name>-root`, and the root's folder of that workspace's logs (made), as a bridge of
    `bin_path` names it in `session/list`: (workspace, root, folder)."""
    workspace = tmp / f"{name}-ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "turn.json").write_text(json.dumps({"steps": [{"text": "ok"}]}))
    root = tmp / f"{name}-root"
    proc = subprocess.Popen([str(bin_path), "--stdio", "--session-root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin
    proc.stdin.write(request(1, "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "turn.json"}))
    proc.stdin.write(request(2, "session/list", {}))
    proc.stdin.flush()
    read_until(proc, 1)
    listed = read_until(proc, 2)["result"]
    proc.stdin.close()
    proc.wait()
    if "logFolder" not in listed:
        raise RuntimeError(f"{bin_path} names no logFolder in session/list: a build older than that field")
    folder = Path(listed["logFolder"])
    folder.mkdir(parents=True, exist_ok=True)
    return workspace, root, folder


def log_line(obj: Dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def write_log(path: Path, session_id: str, events: int, t0: int = TIME0) -> int:
    """A log of `events` durable events in turns of 11 (2 tool-call steps and a final answer); returns its size."""
    out: List[str] = [log_line({"type": "session-header", "version": 1, "sessionId": session_id, "workspace": "/bench",
                             "createdAt": t0, "provider": "scripted", "model": "bench"})]
    seq = written = turn = 0

    def ev(kind: str, data: Dict[str, Any]) -> None:
        nonlocal seq, written
        seq += 1
        written += 1
        out.append(log_line({"type": kind, "seq": seq, "time": t0 + seq, "data": data}))

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
        f.write(log_line({"type": "context/compacted", "seq": last["seq"] + 1, "time": last["time"] + 1,
                       "data": {"summary": "SUMMARY: the agent read source files one by one and said what each exports.",
                                "tokensBefore": 900_000, "tokensAfter": 2_000, "keptFromSeq": kept["seq"], "turn": turn,
                                "trigger": "auto"}}))


def request(rid: int, method: str, params: Dict[str, Any]) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def read_until(proc: "subprocess.Popen[bytes]", rid: int) -> Dict[str, Any]:
    assert proc.stdout
    while True:
        msg: Dict[str, Any] = json.loads(proc.stdout.readline())
        if msg.get("id") == rid:
            if "error" in msg:
                raise RuntimeError(f"request {rid} failed: {msg['error']}")
            return msg

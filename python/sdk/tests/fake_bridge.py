#!/usr/bin/env python3
"""A fake harness-bridge for the SDK's tests: the server half of the protocol, stdlib only.

It understands the same script format as the real bridge's ``scripted`` provider (``model``
is ``demo`` or a path to a JSON script, relative to the workspace) for the parts the tests
use: reasoning/text streaming with ``chunkSize``/``repeat``/``delayMs``, tool calls (the
``task`` tool runs a child session with the script's ``subagent`` turns; ``read_file`` reads
a file; any other tool returns a canned result), ``hang``, ``error``, ``usage``.

Fault modes, comma-separated in ``FAKE_BRIDGE_MODE``:

* ``die-mid-request``: on ``session/prompt``, stream two events, write to stderr, exit 3.
* ``close-stdout``: on ``session/prompt``, stream one event, then close stdout and keep running
  (reading stdin until its end, then exiting 0).
* ``server-request``: before each prompt response, send request-shaped frames that reuse
  the prompt's id (one even carries a ``result``).
* ``garbage``: before each prompt response, send a non-JSON line, an array and a blank line.
* ``ignore-sigterm``: ignore SIGTERM, never answer ``shutdown``, never exit on EOF.
* ``big-frame``: the last assistant message of each turn holds 16 MiB + 1 characters.
* ``slow-initialize``: answer ``initialize`` after ``FAKE_BRIDGE_DELAY`` seconds (default 30).
* ``protocol-2``: ``initialize`` answers ``protocolVersion: 2``.
* ``bad-prompt-result``: ``session/prompt`` answers ``{status: "ok", reason: {kind: "aborted"}}``.
* ``exit-at-start``: write two stderr lines and exit 1 at once.
* ``deep-nesting``: before each prompt response, send frames nested 5 000 levels deep (past
  any JSON decoder's recursion limit): a ``session.event`` of the session shaped like the
  bridge's own lines, one that is not, a ``subagent.started``, a response whose id is nested,
  and a response with the prompt's id whose result is nested; then the real response.
* ``unknown-events``: before each ``turn/end``, send what a newer bridge might: a
  ``session.event`` of type ``plan/update``, an ``assistant/chunk`` of kind ``citation-delta``,
  and a ``session.metrics`` notification (with the ``sessionId``).

``FAKE_BRIDGE_LOG``: a file to which every received frame is appended (one JSON per line),
and argv as the first line. ``FAKE_BRIDGE_SERVER_VERSION`` overrides ``serverInfo.version``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

MODES = set(filter(None, os.environ.get("FAKE_BRIDGE_MODE", "").split(",")))
LOG_PATH = os.environ.get("FAKE_BRIDGE_LOG")
BIG = 16 * 1024 * 1024 + 1

DEMO = {
    "turns": [
        {
            "steps": [
                {
                    "reasoning": "The user wants to know about the README.",
                    "text": "Let me read README.md.",
                    "toolCalls": [{"id": "call-1", "name": "read_file", "arguments": {"path": "README.md"}}],
                },
                {"text": "I read README.md; it describes this workspace."},
            ]
        }
    ]
}


def package_version() -> str:
    for d in Path(__file__).resolve().parents:
        pkg = d / "package.json"
        if pkg.is_file():
            try:
                data = json.loads(pkg.read_text())
            except ValueError:
                continue
            if data.get("name") == "harness-bridge":
                return data["version"]
    return "0.0.0"


def deep_frames(sid: str, req_id) -> bytes:
    """Frames nested 5 000 deep, written by hand (json.dumps itself would recurse)."""
    deep = b"[" * 5000 + b"]" * 5000
    s = json.dumps(sid).encode()
    frames = [
        b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":' + s
        + b',"event":{"type":"tool/call","seq":1,"time":0,"data":{"arguments":' + deep + b'}}}}',
        b'{"method":"session.event","jsonrpc":"2.0","params":{"event":{"type":"tool/result","data":' + deep
        + b'},"sessionId":' + s + b'}}',
        b'{"jsonrpc":"2.0","method":"subagent.started","params":{"parentSessionId":' + s
        + b',"childSessionId":"deep-child","description":' + deep + b'}}',
        b'{"jsonrpc":"2.0","id":' + deep + b',"result":{}}',
        b'{"jsonrpc":"2.0","id":' + json.dumps(req_id).encode() + b',"result":{"status":"ok","reason":' + deep + b'}}',
    ]
    return b"\n".join(frames) + b"\n"


class Aborted(Exception):
    pass


class Fake:
    def __init__(self) -> None:
        self.out = sys.stdout.buffer
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.initialized = False
        self.shutting_down = False
        self.cwd = os.getcwd()
        self.script: dict = DEMO
        self.max_steps = 50
        self.seq: dict = {}
        self.turns_done: dict = {}
        self.inflight: dict = {}  # session id -> (thread, cancel event)
        self.child_counter = 0

    # -- output --------------------------------------------------------------------------

    def send(self, frame: dict) -> None:
        data = json.dumps(frame, separators=(",", ":")).encode("utf-8") + b"\n"
        with self.write_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                os._exit(0)

    def send_raw(self, data: bytes) -> None:
        with self.write_lock:
            self.out.write(data)
            self.out.flush()

    def result(self, req_id, result) -> None:
        self.send({"jsonrpc": "2.0", "id": req_id, "result": result})

    def error(self, req_id, code: int, message: str, kind: str | None = None) -> None:
        err: dict = {"code": code, "message": message}
        if kind:
            err["data"] = {"kind": kind}
        self.send({"jsonrpc": "2.0", "id": req_id, "error": err})

    def event(self, sid: str, type_: str, data: dict) -> None:
        with self.state_lock:
            seq = self.seq.get(sid, 0) + 1
            self.seq[sid] = seq
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "session.event",
                "params": {"sessionId": sid, "event": {"type": type_, "seq": seq, "time": int(time.time() * 1000), "data": data}},
            }
        )

    # -- requests ------------------------------------------------------------------------

    def handle(self, frame: dict) -> None:
        method = frame.get("method")
        req_id = frame.get("id")
        params = frame.get("params") or {}
        if req_id is None:
            return  # notification-shaped: ignored
        if self.shutting_down:
            return self.error(req_id, -32003, "shutting down", "shutting-down")
        if method == "initialize":
            return self.initialize(req_id, params)
        if method == "shutdown":
            return self.shutdown(req_id)
        if method in ("session/prompt", "session/cancel"):
            if not self.initialized:
                return self.error(req_id, -32002, "not initialized: send initialize first", "not-initialized")
            if method == "session/prompt":
                return self.prompt(req_id, params)
            return self.cancel(req_id, params)
        self.error(req_id, -32601, f"unknown method: {method}")

    def initialize(self, req_id, params: dict) -> None:
        if "slow-initialize" in MODES:
            time.sleep(float(os.environ.get("FAKE_BRIDGE_DELAY", "30")))
        if self.initialized:
            return self.error(req_id, -32002, "already initialized", "already-initialized")
        if params.get("provider") not in ("scripted", "fake"):
            return self.error(req_id, -32602, f"unknown provider {params.get('provider')!r}; registered: scripted")
        self.cwd = params.get("cwd") or self.cwd
        model = params.get("model", "demo")
        if model != "demo":
            path = Path(model) if os.path.isabs(model) else Path(self.cwd) / model
            try:
                script = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                return self.error(req_id, -32004, f"scripted model {model}: {exc}", "provider-unavailable")
            self.script = script if "turns" in script else {"turns": [script]}
        self.max_steps = params.get("maxSteps") or 50
        self.initialized = True
        self.result(
            req_id,
            {
                "serverInfo": {"name": "harness-bridge", "version": os.environ.get("FAKE_BRIDGE_SERVER_VERSION", package_version())},
                "protocolVersion": 2 if "protocol-2" in MODES else 1,
                "providers": ["scripted"],
            },
        )

    def prompt(self, req_id, params: dict) -> None:
        sid = params.get("sessionId")
        blocks = params.get("contentBlocks")
        if not isinstance(sid, str) or not sid or not isinstance(blocks, list) or not blocks:
            return self.error(req_id, -32602, "params.sessionId / params.contentBlocks invalid")
        with self.state_lock:
            if sid in self.inflight:
                return self.error(req_id, -32001, f"session {sid} is busy", "session-busy")
            cancel = threading.Event()
            thread = threading.Thread(target=self.turn_thread, args=(req_id, sid, blocks, cancel), daemon=True)
            self.inflight[sid] = (thread, cancel)
        if "die-mid-request" in MODES:
            self.event(sid, "user/message", {"id": "u1", "content": blocks})
            self.event(sid, "turn/start", {"turn": 0})
            sys.stderr.write("harness-bridge error: fake bridge crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        if "close-stdout" in MODES:
            self.event(sid, "user/message", {"id": "u1", "content": blocks})
            with self.write_lock:
                self.out.flush()
                os.close(1)
                self.out = open(os.devnull, "wb")
            with self.state_lock:
                del self.inflight[sid]
            return
        thread.start()

    def turn_thread(self, req_id, sid: str, blocks: list, cancel: threading.Event) -> None:
        try:
            reason = self.run_turn(sid, blocks, self.script["turns"], cancel)
            if "server-request" in MODES:
                self.send({"jsonrpc": "2.0", "id": req_id, "method": "permission/request", "params": {"sessionId": sid}})
                self.send(
                    {"jsonrpc": "2.0", "id": req_id, "method": "session/prompt",
                     "result": {"status": "error", "reason": {"kind": "internal-error", "message": "spoofed"}}}
                )
                # Shaped like the bridge's session.event lines (the SDK's fast path), plus an id.
                self.send({"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": sid, "event": {
                    "type": "spoofed", "seq": 999999, "time": 0, "data": {}}}, "id": req_id})
            if "deep-nesting" in MODES:
                self.send_raw(deep_frames(sid, req_id))
            if "garbage" in MODES:
                self.send_raw(b"this is not json\n[1,2,3]\n\n\"scalar\"\n")
            status = "ok" if reason["kind"] == "completed" else "aborted" if reason["kind"] == "aborted" else "error"
            if "bad-prompt-result" in MODES:
                status, reason = "ok", {"kind": "aborted"}
            with self.state_lock:
                self.inflight.pop(sid, None)
            self.result(req_id, {"status": status, "reason": reason})
        except Exception as exc:  # pragma: no cover - a fake bug shows up in the test's stderr tail
            sys.stderr.write(f"harness-bridge error: fake turn failed: {exc!r}\n")
            with self.state_lock:
                self.inflight.pop(sid, None)
            self.error(req_id, -32603, f"internal error: {exc}")

    def cancel(self, req_id, params: dict) -> None:
        sid = params.get("sessionId")
        with self.state_lock:
            entry = self.inflight.get(sid)
        if entry is None:
            return self.result(req_id, {"cancelled": False})
        thread, ev = entry
        ev.set()

        def answer() -> None:
            thread.join()
            self.result(req_id, {"cancelled": True})

        threading.Thread(target=answer, daemon=True).start()

    def shutdown(self, req_id) -> None:
        if "ignore-sigterm" in MODES:
            return
        self.shutting_down = True
        with self.state_lock:
            entries = list(self.inflight.values())
        for _, ev in entries:
            ev.set()
        for thread, _ in entries:
            thread.join()
        self.result(req_id, {})
        os._exit(0)

    # -- turns ---------------------------------------------------------------------------

    def run_turn(self, sid: str, blocks: list, turns: list, cancel: threading.Event) -> dict:
        with self.state_lock:
            turn = self.turns_done.get(sid, 0)
            self.turns_done[sid] = turn + 1
        steps = turns[turn % len(turns)]["steps"]
        self.event(sid, "user/message", {"id": f"{sid}-u{turn}", "content": blocks})
        self.event(sid, "turn/start", {"turn": turn})
        total = {"inputTokens": 0, "outputTokens": 0}
        reason: dict = {"kind": "completed"}
        for index, step in enumerate(steps):
            if index >= self.max_steps:
                reason = {"kind": "max-steps", "limit": self.max_steps}
                break
            self.event(sid, "step/start", {"turn": turn, "step": index})
            content: list = []
            aborted = False
            try:
                size = int(step.get("chunkSize", 16))
                delay = step.get("delayMs", 0) / 1000.0
                for kind, key in (("reasoning-delta", "reasoning"), ("text-delta", "text")):
                    text = step.get(key)
                    if not text:
                        continue
                    repeat = int(step.get("repeat", 1)) if key == "text" else 1
                    streamed = []
                    for _ in range(repeat):
                        for i in range(0, len(text), size):
                            if delay and cancel.wait(delay):
                                raise Aborted
                            if cancel.is_set():
                                raise Aborted
                            piece = text[i : i + size]
                            streamed.append(piece)
                            self.event(sid, "assistant/chunk", {"turn": turn, "step": index, "chunk": {"type": kind, "text": piece}})
                    content.append({"type": key, "text": "".join(streamed)})
                calls = []
                for ci, call in enumerate(step.get("toolCalls") or []):
                    cid = call.get("id") or f"call-{turn}-{index}-{ci}"
                    args = call.get("arguments") or {}
                    self.event(sid, "assistant/chunk", {"turn": turn, "step": index, "chunk": {
                        "type": "tool-call-delta", "index": ci, "id": cid, "name": call["name"], "argumentsDelta": json.dumps(args)}})
                    calls.append({"type": "tool-call", "id": cid, "name": call["name"], "arguments": args})
                content.extend(calls)
                if step.get("hang"):
                    cancel.wait()
                    raise Aborted
            except Aborted:
                aborted = True
            usage = step.get("usage") or {"inputTokens": 10, "outputTokens": max(1, sum(len(b.get("text", "")) for b in content) // 4)}
            total["inputTokens"] += usage["inputTokens"]
            total["outputTokens"] += usage["outputTokens"]
            if "big-frame" in MODES and not step.get("toolCalls"):
                content = [{"type": "text", "text": "x" * BIG}]
            finish = "aborted" if aborted else "error" if step.get("error") else step.get("finishReason") or (
                "tool-calls" if step.get("toolCalls") else "stop")
            self.event(sid, "assistant/message", {"id": f"{sid}-a{turn}-{index}", "turn": turn, "step": index,
                                                  "content": content, "finishReason": finish, "usage": usage})
            if aborted:
                for block in content:
                    if block["type"] == "tool-call":
                        self.event(sid, "tool/result", {"callId": block["id"], "name": block["name"], "content": [
                            {"type": "text", "text": "aborted"}], "isError": True, "durationMs": 0})
                reason = {"kind": "aborted"}
                break
            if step.get("error"):
                reason = {"kind": "model-error", **step["error"]}
                break
            for block in content:
                if block["type"] == "tool-call":
                    text, is_error = self.run_tool(sid, block, cancel)
                    self.event(sid, "tool/result", {"callId": block["id"], "name": block["name"], "content": [
                        {"type": "text", "text": text}], "isError": is_error, "durationMs": 1})
            if cancel.is_set():
                reason = {"kind": "aborted"}
                break
            if finish != "tool-calls":
                break
        if "unknown-events" in MODES:
            self.event(sid, "plan/update", {"items": [{"step": "read", "done": True}]})
            self.event(sid, "assistant/chunk", {"turn": turn, "step": 0, "chunk": {"type": "citation-delta", "url": "https://example.com"}})
            self.send({"jsonrpc": "2.0", "method": "session.metrics", "params": {"sessionId": sid, "tokensPerSecond": 12.5}})
        self.event(sid, "turn/end", {"turn": turn, "reason": reason, "usage": total})
        return reason

    def run_tool(self, sid: str, call: dict, cancel: threading.Event) -> tuple:
        if call["name"] == "read_file":
            try:
                return (Path(self.cwd) / call["arguments"].get("path", "")).read_text(), False
            except OSError as exc:
                return f"read_file failed: {exc}", True
        if call["name"] == "task":
            with self.state_lock:
                self.child_counter += 1
                child = f"{sid}.task-{self.child_counter}"
            self.send({"jsonrpc": "2.0", "method": "subagent.started", "params": {"parentSessionId": sid, "childSessionId": child}})
            turns = (self.script.get("subagent") or self.script)["turns"]
            prompt = [{"type": "text", "text": call["arguments"].get("prompt", "")}]
            reason = self.run_turn(child, prompt, turns, cancel)
            status = "ok" if reason["kind"] == "completed" else "aborted" if reason["kind"] == "aborted" else "error"
            self.send({"jsonrpc": "2.0", "method": "subagent.finished", "params": {
                "provider": "scripted", "agentId": child, "parentSessionId": sid, "childSessionId": child,
                "status": status, "stopReason": reason,
                "lastAssistantMessage": [{"type": "text", "text": "child done"}]}})
            return "child done", status != "ok"
        return f"fake result of {call['name']}", False


def main() -> None:
    if LOG_PATH:
        with open(LOG_PATH, "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "pid": os.getpid(), "node_options": os.environ.get("NODE_OPTIONS")}) + "\n")
    if "exit-at-start" in MODES:
        sys.stderr.write("harness-bridge info: starting\nharness-bridge error: fatal start-up error (fake)\n")
        sys.stderr.flush()
        sys.exit(1)
    if "ignore-sigterm" in MODES:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("harness-bridge info: fake bridge ready\n")
    sys.stderr.flush()
    fake = Fake()
    for raw in sys.stdin.buffer:
        line = raw.strip()
        if not line:
            continue
        try:
            frame = json.loads(line)
        except ValueError:
            fake.error(None, -32700, "parse error")
            continue
        if LOG_PATH:
            with open(LOG_PATH, "a") as f:
                params = frame.get("params") if isinstance(frame, dict) else None
                f.write(json.dumps({"method": frame.get("method") if isinstance(frame, dict) else None,
                                    "id": frame.get("id") if isinstance(frame, dict) else None,
                                    "sessionId": params.get("sessionId") if isinstance(params, dict) else None}) + "\n")
        if isinstance(frame, dict):
            fake.handle(frame)
    # EOF: let in-flight turns finish, then exit.
    if "ignore-sigterm" in MODES:
        while True:
            time.sleep(3600)
    with fake.state_lock:
        threads = [t for t, _ in fake.inflight.values()]
    for t in threads:
        t.join()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

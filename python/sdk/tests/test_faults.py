"""Faults seen through the SDK, against the real binary.

* The bridge is SIGKILLed mid-turn: the running ``run`` raises :class:`TransportClosedError` at
  once, carrying the exit status and the tail of the bridge's stderr; later calls fail the same
  way; no process the bash tool started survives (checked through a pid file); the log holds
  exactly the durable events the SDK saw; a new bridge on the same session root resumes the
  session from it, past a torn last line — ``seq`` strictly increases, nothing is duplicated.
* The model server fails (a local DeepSeek-format server): 429 with ``Retry-After`` is retried
  and the turn completes; 429 past the retries, 500, a reset, a stall and garbage each end the
  turn ``status == "error"`` with a ``model-error`` reason, and the same harness serves the next
  turn.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from deepseek_harness import DeepSeekHarness, Notification
from deepseek_harness.errors import TransportClosedError

from conftest import REPO_ROOT, call_within, real_bridge_or_skip, wait_until

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from fake_deepseek import FakeDeepSeek  # noqa: E402


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def log_events(session_root: Path, session_id: str) -> Tuple[List[Dict[str, Any]], str]:
    """The events of a session log (header dropped), and the raw text."""
    (path,) = list(session_root.rglob(f"{session_id}.jsonl"))
    text = path.read_text()
    lines = text.split("\n")
    assert lines[-1] == "", "the log must end with a whole line"
    header, *events = [json.loads(line) for line in lines[:-1]]
    assert header["type"] == "session-header"
    return events, text


# ---------------------------------------------------------------------------
# SIGKILL mid-turn
# ---------------------------------------------------------------------------


def test_sigkill_mid_turn_then_resume(real, tmp_path):
    pidfile = tmp_path / "tool-pids"
    # Two processes, one of them deaf to SIGTERM, each writing its pid, then waiting forever.
    command = (
        f"bash -c 'trap \"\" TERM; echo $$ >> {pidfile}; while :; do sleep 0.2; done' & "
        f"bash -c 'echo $$ >> {pidfile}; sleep 86400; :' & wait"
    )
    script = {
        "turns": [
            {"steps": [
                {"text": "Starting a long job.", "toolCalls": [{"id": "job", "name": "bash", "arguments": {"command": command}}]},
                {"text": "never reached"},
            ]},
            {"steps": [{"text": "Back after the crash."}]},
        ]
    }
    # full mode: no sandbox, so the pids written are the host's.
    h = real.harness(script, permission_mode="full", log_level="info")
    h.start()
    proc = h.client.process
    seen: List[Notification] = []
    box: Dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = h.run("go", session_id="killed", on_notification=seen.append)
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert wait_until(lambda: pidfile.exists() and len(pidfile.read_text().split()) == 2, 30), "the tool did not start"
    tool_pids = [int(p) for p in pidfile.read_text().split()]
    assert all(alive(p) for p in tool_pids)

    os.kill(proc.pid, signal.SIGKILL)
    t.join(30)  # a hang guard: the failure is reported as soon as stdout closes
    assert not t.is_alive(), "run() did not fail after the bridge was killed"
    err = box.get("error")
    assert isinstance(err, TransportClosedError), box
    assert err.exit_code == -signal.SIGKILL
    assert any("initialized: provider scripted" in line for line in err.stderr_tail), err.stderr_tail
    assert "initialized: provider scripted" in str(err)
    with pytest.raises(TransportClosedError):
        call_within(10, h.run, "again", session_id="killed")

    # Nothing the tool started outlives the bridge.
    assert wait_until(lambda: not any(alive(p) for p in tool_pids), 15), [p for p in tool_pids if alive(p)]

    # The log holds exactly the durable events the SDK was told about, in order.
    durable_seen = [n.payload["event"] for n in seen if n.method == "session.event" and n.event_type != "assistant/chunk"]
    logged, _ = log_events(real.session_root, "killed")
    assert logged == durable_seen
    assert [e["type"] for e in logged] == ["user/message", "turn/start", "step/start", "assistant/message"]
    last_seq = max(n.payload["event"]["seq"] for n in seen if n.method == "session.event")
    call_within(30, h.close)

    # A kill in the middle of an append would leave a torn last line: it must be tolerated.
    (log_path,) = list(real.session_root.rglob("killed.jsonl"))
    with open(log_path, "a") as f:
        f.write('{"type":"tool/result","seq":99,"time":1,"data":{"callId":"jo')

    # A new bridge resumes the session from the log.
    h2 = real.harness(script, permission_mode="full")
    r = call_within(60, h2.run, "and now?", session_id="killed")
    assert (r.status, r.final_response) == ("ok", "Back after the crash.")
    seqs = [n.payload["event"]["seq"] for n in r.notifications if n.method == "session.event"]
    assert seqs[0] == last_seq + 1
    assert all(b > a for a, b in zip(seqs, seqs[1:]))
    assert next(e for e in r.events if e.type == "turn/start").data["turn"] == 2
    call_within(30, h2.close)

    events, _ = log_events(real.session_root, "killed")
    assert events[: len(logged)] == logged
    resumed = [n.payload["event"] for n in r.notifications if n.method == "session.event" and n.event_type != "assistant/chunk"]
    assert events[len(logged):] == resumed
    all_seqs = [e["seq"] for e in events]
    assert all(b > a for a, b in zip(all_seqs, all_seqs[1:])), all_seqs


# ---------------------------------------------------------------------------
# The model server fails
# ---------------------------------------------------------------------------


def say(text: str) -> List[Dict[str, Any]]:
    return [
        {"delta": {"role": "assistant", "content": text}},
        {"delta": {}, "finish_reason": "stop"},
        {"usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
    ]


RECOVERY = {"Are you still there?": [{"events": say("Still here.")}]}

FAULTS = [
    ("429 past the retries", [{"status": 429, "body": {"error": {"message": "Rate limit reached", "type": "rate_limit"}}}],
     {"http_status": 429, "code": "rate-limit"}),
    ("500 past the retries", [{"status": 500, "body": {"error": {"message": "overloaded"}}}], {"http_status": 500, "code": "http"}),
    ("a reset mid-stream", [{"events": [{"delta": {"role": "assistant", "content": "Half an ans"}}], "reset": True}], {"code": ("network", "stream")}),
    ("a stall after output", [{"events": [{"delta": {"role": "assistant", "content": "thinking"}}], "stall": True}], {"code": "timeout"}),
    ("garbage, then no finish", [{"events": [{"raw": "data: {not json\n\n"}, {"raw": "what is this\n\n"},
                                             {"delta": {"role": "assistant", "content": "partial"}}]}], {"code": "stream"}),
]


def deepseek_harness(base_url: str, **env: str) -> DeepSeekHarness:
    return DeepSeekHarness(
        provider="deepseek",
        model="deepseek-flash",
        cwd=REPO_ROOT,
        bridge_bin=real_bridge_or_skip(),
        env={
            "DEEPSEEK_API_KEY": "sk-test-not-a-real-key",
            "DEEPSEEK_BASE_URL": base_url,
            "HARNESS_MAX_RETRIES": "1",
            "HARNESS_RETRY_BASE_MS": "10",
            # Ends the stall case; long enough that a bridge stalled by a busy machine does not
            # time out a reply that is streaming.
            "HARNESS_IDLE_TIMEOUT_MS": "2500",
            "NO_PROXY": "127.0.0.1",
            "no_proxy": "127.0.0.1",
            **env,
        },
        shutdown_timeout_seconds=5.0,
    )


def test_model_faults_end_the_turn_and_the_harness_keeps_serving(tmp_path):
    with FakeDeepSeek() as server:
        server.table = {name: entries for name, entries, _ in FAULTS}
        server.table.update(RECOVERY)
        with deepseek_harness(server.base_url) as h:
            for n, (name, _, expected) in enumerate(FAULTS):
                session = h.start_session(f"fault-{n}")
                r = call_within(30, session.run, name)
                assert (r.status, r.reason.kind) == ("error", "model-error"), (name, r.reason)
                codes = expected["code"] if isinstance(expected["code"], tuple) else (expected["code"],)
                assert r.reason.code in codes, (name, r.reason)
                assert r.reason.http_status == expected.get("http_status"), (name, r.reason)
                assert r.reason.message, name
                assert r.events[-1].type == "turn/end"
                again = call_within(30, session.run, "Are you still there?")
                assert (again.status, again.final_response) == ("ok", "Still here."), name
        assert server.problems == []


class _RetryAfterServer:
    """Answers the first request 429 with `Retry-After: 0`, every later one with a short stream."""

    def __init__(self) -> None:
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests += 1
                if outer.requests == 1:
                    body = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit"}}).encode()
                    self.send_response(429)
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                frames = [
                    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "after the wait"}, "finish_reason": None}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                ]
                payload = "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"
                data = payload.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "_RetryAfterServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_429_with_retry_after_is_retried_and_the_turn_completes():
    with _RetryAfterServer() as server:
        # A backoff that ignored Retry-After would wait 30-60 s, far past the hang guard.
        with deepseek_harness(server.base_url, HARNESS_MAX_RETRIES="2", HARNESS_RETRY_BASE_MS="60000", HARNESS_RETRY_MAX_MS="60000") as h:
            r = call_within(20, h.run, "hello")
        assert (r.status, r.final_response) == ("ok", "after the wait")
        assert server.requests == 2

"""A local DeepSeek-format chat-completions server that replays a scenario's ``server`` table.

Standard library only. The table format is in snapshots/README.md ("The deepseek
scenarios"): responses are keyed by the request's first user message, and the k-th request
after the last user message gets entry k.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Set


def _text_of(message: Dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _chunk(model: str, n: int, event: Dict[str, Any]) -> Dict[str, Any]:
    base = {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion.chunk",
        "created": 1750000000,
        "model": model,
        "system_fingerprint": "fp_fake",
    }
    if "usage" in event:
        return {**base, "choices": [], "usage": event["usage"]}
    choice = {"index": 0, "delta": event.get("delta", {}), "logprobs": None, "finish_reason": event.get("finish_reason")}
    return {**base, "choices": [choice]}


# The efforts DeepSeek takes, each mapped to low, high or max (guides/thinking_mode).
_KNOWN_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")


def _invalid_request(message: str) -> Dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}


def _settings_refusal(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """DeepSeek's answer (HTTP 400) to model settings it does not take, else None.

    ``thinking.type`` is ``enabled`` or ``disabled``, ``reasoning_effort`` one of the efforts its
    table maps (guides/thinking_mode), ``user_id`` a string of at most 512 UTF-8 bytes
    (quick_start/rate_limit). The twin: test/support/server-rules.ts.
    """
    if "thinking" in body:
        thinking = body["thinking"]
        if not (isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled")):
            return _invalid_request(f"thinking.type must be 'enabled' or 'disabled' (got {json.dumps(thinking)})")
    if "reasoning_effort" in body and body["reasoning_effort"] not in _KNOWN_EFFORTS:
        return _invalid_request(f"unknown reasoning_effort {json.dumps(body['reasoning_effort'])}")
    if "user_id" in body:
        user = body["user_id"]
        if not isinstance(user, str) or len(user.encode("utf-8")) > 512:
            return _invalid_request("user_id must be a string of at most 512 bytes")
    return None


def _thinking_mode_refusal(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """DeepSeek's answer (HTTP 400) to a history that breaks thinking mode's rule, else None.

    Thinking mode is on unless the request sends ``thinking: {type: "disabled"}``. Between two
    user messages in which the model called a tool, every assistant message must carry its
    ``reasoning_content`` (a string, "" allowed) in every later request.
    Source: https://api-docs.deepseek.com/guides/thinking_mode (the twin: test/support/server-rules.ts).
    """
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "disabled":
        return None
    messages = body.get("messages") or []
    exchange: List[Dict[str, Any]] = []
    for message in [*messages, {"role": "user"}]:
        if not isinstance(message, dict) or message.get("role") != "user":
            exchange.append(message if isinstance(message, dict) else {})
            continue
        assistants = [m for m in exchange if m.get("role") == "assistant"]
        if any(m.get("tool_calls") for m in assistants) and any(not isinstance(m.get("reasoning_content"), str) for m in assistants):
            return {
                "error": {
                    "message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
        exchange = []
    return None


TOOL_WITHOUT_CALL = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
CALL_WITHOUT_TOOL = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                     "'tool_call_id'. (insufficient tool messages following tool_calls message)")


def _tool_pairing_refusal(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """DeepSeek's answer (HTTP 400) to calls and results that do not pair, else None.

    The tool messages right after an assistant message with ``tool_calls`` must answer each of
    its calls' ids, and every tool message must answer a call of that assistant message (one
    whose ``tool_call_id`` matches no call id is refused). The OpenAI chat format's rule, in
    DeepSeek's words as users report them (the twin: test/support/server-rules.ts).
    """
    calls: Optional[Set[Any]] = None
    answered: Set[Any] = set()
    for m in body.get("messages") or []:
        m = m if isinstance(m, dict) else {}
        if m.get("role") == "tool":
            if calls is None or m.get("tool_call_id") not in calls:
                return _invalid_request(TOOL_WITHOUT_CALL)
            answered.add(m.get("tool_call_id"))
            continue
        if calls is not None and not calls <= answered:
            return _invalid_request(CALL_WITHOUT_TOOL)
        tool_calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        calls = {c.get("id") if isinstance(c, dict) else None for c in tool_calls} if isinstance(tool_calls, list) and tool_calls else None
        answered = set()
    return _invalid_request(CALL_WITHOUT_TOOL) if calls is not None and not calls <= answered else None


def refusal(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Everything DeepSeek refuses that the fake knows of: its settings, the pairing of calls and
    results, then thinking mode's history rule (test/support/server-rules.ts ``deepseekRefusal``)."""
    return _settings_refusal(body) or _tool_pairing_refusal(body) or _thinking_mode_refusal(body)


def request_tokens(body: Dict[str, Any]) -> Dict[str, int]:
    """A request's size as the fakes count it (test/support/server-rules.ts ``requestTokens``):
    a quarter of the characters of its messages (content, reasoning, tool calls), and ``max_tokens``."""
    chars = 0
    for m in body.get("messages", []):
        content = m.get("content")
        chars += len(content) if isinstance(content, str) else len(json.dumps(content if content is not None else "", separators=(",", ":")))
        if isinstance(m.get("reasoning_content"), str):
            chars += len(m["reasoning_content"])
        if m.get("tool_calls") is not None:
            chars += len(json.dumps(m["tool_calls"], separators=(",", ":")))
    max_tokens = body.get("max_tokens")
    return {"messages": -(-chars // 4), "completion": max_tokens if isinstance(max_tokens, int) else 0}


def _context_refusal(body: Dict[str, Any], window: int) -> Optional[Dict[str, Any]]:
    """DeepSeek's HTTP 400 for a request longer than the model's context window, in its words
    (test/support/server-rules.ts ``deepseekContextRefusal``)."""
    size = request_tokens(body)
    total = size["messages"] + size["completion"]
    if total <= window:
        return None
    return _invalid_request(
        f"This model's maximum context length is {window} tokens. However, you requested {total} tokens "
        f"({size['messages']} in the messages, {size['completion']} in the completion). "
        "Please reduce the length of the messages or completion.")


class FakeDeepSeek:
    """Serves on 127.0.0.1 (a free port); ``base_url`` is what DEEPSEEK_BASE_URL should be."""

    def __init__(self) -> None:
        self.table: Dict[str, List[Dict[str, Any]]] = {}
        self.requests: List[Dict[str, Any]] = []
        self.problems: List[str] = []
        #: When set, a request longer than this many tokens is refused as DeepSeek refuses it.
        self.context_window: Optional[int] = None
        self.context_refusals = 0
        self._stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep the smoke's output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                fake._answer(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-deepseek", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeDeepSeek":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _entry_for(self, body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        messages = body.get("messages", [])
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users:
            return None
        # A later turn may have its own key (its own user message); else the session's first.
        entries = self.table.get(_text_of(messages[users[-1]]))
        if entries is None:
            entries = self.table.get(_text_of(messages[users[0]]))
        step = sum(1 for m in messages[users[-1] + 1 :] if m.get("role") == "assistant")
        if entries is None or step >= len(entries):
            return None
        return entries[step]

    def _answer(self, handler: BaseHTTPRequestHandler, body: Dict[str, Any]) -> None:
        refused = refusal(body)
        if refused is not None:
            self.problems.append(f"refused as DeepSeek would (HTTP 400): {json.dumps(refused)}")
            return self._json(handler, 400, refused)
        too_long = None if self.context_window is None else _context_refusal(body, self.context_window)
        if too_long is not None:
            # Not a problem: the bridge is expected to compact and retry.
            self.context_refusals += 1
            return self._json(handler, 400, too_long)
        entry = self._entry_for(body)
        if entry is None:
            self.problems.append(f"no scripted answer for request: {json.dumps(body)[:300]}")
            return self._json(handler, 400, {"error": {"message": "fake server: no scripted answer for this request"}})
        if "status" in entry:
            return self._json(handler, entry["status"], entry.get("body", {}))
        model = body.get("model", "deepseek-flash")
        frames = [e["raw"] if "raw" in e else f"data: {json.dumps(_chunk(model, n, e), ensure_ascii=False)}\n\n" for n, e in enumerate(entry["events"])]
        # [DONE] ends a stream that has a finish_reason (or says "done": true); one without is cut short.
        done = entry.get("done", any(e.get("finish_reason") for e in entry["events"]))
        if not entry.get("stall") and not entry.get("reset") and done:
            frames.append("data: [DONE]\n\n")
        payload = "".join(frames).encode("utf-8")
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close" if not entry.get("stall") else "keep-alive")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        split = entry.get("splitBytes") or len(payload) or 1
        try:
            for i in range(0, len(payload), split):
                piece = payload[i : i + split]
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.flush()
                if entry.get("splitBytes"):
                    time.sleep(0.002)
            if entry.get("stall"):
                # Hold the stream open, silent, until the client goes away or we stop.
                while not self._stop.wait(0.05):
                    try:
                        handler.wfile.write(b"")
                        handler.wfile.flush()
                        if handler.connection.recv(1, 0x40) == b"":  # MSG_DONTWAIT: EOF means gone
                            break
                    except BlockingIOError:
                        continue
                    except OSError:
                        break
                return
            if entry.get("reset"):
                # A reset mid-stream: the connection goes away without the closing chunk.
                handler.connection.shutdown(socket.SHUT_RDWR)
                return
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except OSError:
            pass
        handler.close_connection = True

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, body: Dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        handler.close_connection = True

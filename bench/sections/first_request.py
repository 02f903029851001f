"""The first model request of a fresh bridge: `deepseek` against a local server that streams a
fixed SSE answer, the prompt sent 300 ms after the `initialize` response (the agent modules are
loaded by then), prompt -> response; against the second prompt of the same process, when the
HTTP client (undici's chunk) is loaded and its connection open. What the first request adds is
what loading the HTTP client costs."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List

from common import Context, Count, Result, bridge_env, line, median, prompt_request

COUNTS = {"runs": Count(quick=2, full=21)}


def _frame(payload: Dict[str, object]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def _chunk(delta: Dict[str, object], finish: object = None) -> Dict[str, object]:
    return {"id": "bench", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-flash",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


ANSWER = (_frame(_chunk({"role": "assistant", "content": "hi"})) + _frame(_chunk({}, "stop"))
          + _frame({"id": "bench", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-flash", "choices": [],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}) + b"data: [DONE]\n\n")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length", "0")))
        # One write: headers and body in separate segments would wait on Nagle and the client's
        # delayed ACK (~40 ms), which would be most of every request.
        head = f"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncontent-length: {len(ANSWER)}\r\n\r\n"
        self.wfile.write(head.encode() + ANSWER)

    def log_message(self, *args: object) -> None:
        pass


def _read_response(proc: subprocess.Popen, request_id: int) -> None:
    assert proc.stdout
    while True:
        raw = proc.stdout.readline()
        if not raw:
            raise RuntimeError("the bridge closed stdout before answering")
        frame = json.loads(raw)
        if frame.get("id") == request_id:
            if "result" not in frame or frame["result"].get("status") != "ok":
                raise RuntimeError(f"the prompt failed: {raw[:300]!r}")
            return


def run(ctx: Context) -> Result:
    runs = ctx.count(COUNTS["runs"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = bridge_env(ctx.tmp)
    env.update(DEEPSEEK_API_KEY="sk-bench", DEEPSEEK_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}", NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    first: List[float] = []
    second: List[float] = []
    try:
        for _ in range(runs + 1):  # the first run warms the page cache
            proc = subprocess.Popen([str(ctx.bin), "--stdio", "--no-session-log"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert proc.stdin
            proc.stdin.write(line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"cwd": str(ctx.tmp), "provider": "deepseek", "model": "deepseek-flash"}}))
            proc.stdin.flush()
            assert proc.stdout and b'"result"' in proc.stdout.readline(), "initialize failed"
            time.sleep(0.3)
            times = []
            for request_id in (2, 3):
                start = time.perf_counter()
                proc.stdin.write(prompt_request(request_id, "s"))
                proc.stdin.flush()
                _read_response(proc, request_id)
                times.append(time.perf_counter() - start)
            proc.stdin.close()
            proc.wait()
            first.append(times[0])
            second.append(times[1])
    finally:
        server.shutdown()
    first, second = first[1:], second[1:]
    res = Result("First model request: prompt -> response, 300 ms after initialize (median)", ["request", "ms", "ratio vs the second"])
    res.row("first (loads the HTTP client)", f"{median(first) * 1000:.1f}", f"{median(first) / median(second):.2f}x")
    res.row("second, same process", f"{median(second) * 1000:.1f}", "1.00x")
    res.goal("first model request: reported (issue 34: must not get slower)", f"{median(first) * 1000:.1f} ms, +{(median(first) - median(second)) * 1000:.1f} ms over the second", None)
    res.notes.append(f"{runs} bridges after one warm-up, each: initialize, 300 ms, two one-chunk prompts of one session; --no-session-log.")
    return res

"""The SDK hands the caller's OpenTelemetry span to the bridge (``session/prompt.traceparent``),
for the blocking and the asyncio API: checked end to end, on the spans the real binary exports
to a local OTLP/HTTP receiver (``OTEL_EXPORTER_OTLP_ENDPOINT`` in the bridge's environment). The
caller's span is made with opentelemetry-api alone (a span context as a propagated one looks),
so no SDK is needed here; ``deepseek-harness[otel]`` installs the API."""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List

import pytest

from conftest import Backend, run_async
from deepseek_harness._internal import tracing

try:
    from opentelemetry import trace
except ImportError:  # pragma: no cover - scripts/setup.sh installs the [otel] extra
    if os.environ.get("CI"):
        raise
    pytest.skip("opentelemetry-api is not installed (pip install 'deepseek-harness[otel]')", allow_module_level=True)

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
SPAN_ID = 0x00F067AA0BA902B7


class Receiver:
    """A local OTLP/HTTP receiver: every JSON export the bridge POSTs."""

    def __init__(self) -> None:
        self.bodies: List[Dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length", "0"))
                outer.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def turn_spans(self) -> List[Dict[str, Any]]:
        return [s for b in self.bodies for rs in b["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
                if s["name"].startswith("invoke_agent")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def client_span() -> Any:
    context = trace.SpanContext(trace_id=TRACE_ID, span_id=SPAN_ID, is_remote=True, trace_flags=trace.TraceFlags(1))
    return trace.use_span(trace.NonRecordingSpan(context))


def test_a_blocking_run_under_a_span_makes_the_turn_its_child(real: Backend, receiver: Receiver) -> None:
    harness = real.harness(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
    with client_span():
        assert harness.run("What is in README.md?").status == "ok"
    harness.run("and without a span?")
    harness.close()  # shutdown: the bridge sends its spans before it exits
    spans = receiver.turn_spans()
    assert len(spans) == 2, spans
    child = [s for s in spans if s.get("parentSpanId")]
    assert [(s["traceId"], s["parentSpanId"]) for s in child] == [(f"{TRACE_ID:032x}", f"{SPAN_ID:016x}")]
    # Outside any span nothing is sent: that turn is a trace of its own.
    (root,) = [s for s in spans if not s.get("parentSpanId")]
    assert root["traceId"] != f"{TRACE_ID:032x}"


def test_a_stream_iterated_under_a_span_makes_the_turn_its_child(real: Backend, receiver: Receiver) -> None:
    harness = real.harness(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
    with client_span():
        items = list(harness.stream("What is in README.md?"))
    assert items[-1].status == "ok"
    harness.close()
    (span,) = receiver.turn_spans()
    assert (span["traceId"], span["parentSpanId"]) == (f"{TRACE_ID:032x}", f"{SPAN_ID:016x}")


def test_an_async_run_under_a_span_makes_the_turn_its_child(real: Backend, receiver: Receiver) -> None:
    async def main() -> None:
        async with real.async_harness(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}) as harness:
            with client_span():
                result = await harness.run("What is in README.md?")
            assert result.status == "ok"

    run_async(main())
    (span,) = receiver.turn_spans()
    assert (span["traceId"], span["parentSpanId"]) == (f"{TRACE_ID:032x}", f"{SPAN_ID:016x}")


def test_current_traceparent_is_w3c_and_none_without_a_span_or_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tracing.current_traceparent() is None  # no current span
    with client_span():
        assert tracing.current_traceparent() == f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-01"
    # Without opentelemetry-api installed: nothing, and no error.
    monkeypatch.setattr(tracing, "_trace", tracing._UNSET)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with client_span():
        assert tracing.current_traceparent() is None

"""The caller's OpenTelemetry context as ``session/prompt.traceparent``, so the bridge's turn span
(docs/tracing.md) is a child of the span the prompt was sent from.

Optional: ``opentelemetry-api`` is imported only if installed (``pip install
'deepseek-harness[otel]'``); without it, or outside any recording span, nothing is sent. The
context is read where the prompt is built, in the caller's thread or task (``PromptCall``), so
contextvars give the caller's span for the sync and the async API alike.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

__all__ = ["current_traceparent"]

_UNSET: Any = object()
#: ``opentelemetry.trace`` once imported, ``None`` when it is not installed (looked up once).
_trace: Any = _UNSET


def _otel_trace() -> Any:
    global _trace
    if _trace is _UNSET:
        try:
            _trace = importlib.import_module("opentelemetry.trace")
        except ImportError:
            _trace = None
    return _trace


def current_traceparent() -> Optional[str]:
    """``00-<trace id>-<span id>-<flags>`` of the current span, or None (no API, or no valid span)."""
    trace = _otel_trace()
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

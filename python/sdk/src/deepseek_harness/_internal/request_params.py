"""The params of the requests the SDK builds as plain dicts (``session/prompt``, ``session/cancel``,
``session/compact`` and the sessions API), typed with their wire names. A ``TypedDict`` is only
a type: the dicts stay dicts, and mypy checks every key the SDK writes. ``initialize`` takes its
settings from ``options.INITIALIZE_FIELDS``; ``session/tool_result`` and ``session/permission``
have pydantic models (``client_tool_models``). tests/test_wire_shape.py checks all of them
against the bridge's wire types."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, TypedDict

__all__ = [
    "TextBlockParams", "SessionIdParams", "SessionPromptParams", "SessionCancelParams", "SessionCompactParams",
    "SessionDeleteParams", "SessionListParams", "SessionReadParams", "SessionForkParams", "SessionSteerParams",
]


class SessionIdParams(TypedDict):
    sessionId: str


#: ``session/cancel``, ``session/compact`` and ``session/delete`` take the session's id only.
SessionCancelParams = SessionIdParams
SessionCompactParams = SessionIdParams
SessionDeleteParams = SessionIdParams


class SessionListParams(TypedDict):
    """None."""


class TextBlockParams(TypedDict):
    type: Literal["text"]
    text: str


class _PromptRequired(TypedDict):
    sessionId: str
    contentBlocks: List[TextBlockParams]


class SessionPromptParams(_PromptRequired, total=False):
    outputSchema: Dict[str, Any]
    maxCostUsd: float
    #: W3C Trace Context of the caller's current span (``deepseek_harness._internal.tracing``).
    traceparent: str


class SessionSteerParams(TypedDict):
    """``session/steer`` (turn_control.py)."""

    sessionId: str
    contentBlocks: List[TextBlockParams]


class SessionReadParams(SessionIdParams, total=False):
    afterSeq: int
    limit: int


class _ForkRequired(TypedDict):
    sessionId: str
    newSessionId: str


class SessionForkParams(_ForkRequired, total=False):
    turn: int

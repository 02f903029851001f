"""The params and results of the requests a turn uses (docs/PROTOCOL.md): ``session/prompt``,
``session/cancel``, ``session/compact``, ``session/steer``, the answers to the bridge's questions
(``session/tool_result``, ``session/permission``, ``session/hook``) and ``session/rewind``.
``initialize`` is in :mod:`.initialize`, the sessions API in :mod:`.sessions_api`.

Params the SDK builds as plain dicts are ``TypedDict``\\ s spelled with their wire names: only a
type, the dicts stay dicts, and mypy checks every key the SDK writes. Params the SDK builds from a
user's answer, and every result, are pydantic models (snake_case in Python, camelCase on the
wire).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict

from pydantic import ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from .base import TextBlock, WireModel
from .usage import TurnEndReason, TurnStatus, status_of

__all__ = [
    "TextBlockParams",
    "SessionIdParams",
    "SessionPromptParams",
    "SessionPromptResponse",
    "SessionCancelParams",
    "SessionCancelResponse",
    "SessionCompactParams",
    "SessionCompactResponse",
    "SessionSteerParams",
    "SessionSteerResponse",
    "SessionToolResultParams",
    "SessionPermissionParams",
    "SessionHookParams",
    "SessionRewindParams",
    "UnrestoredTurn",
    "RewindResult",
    "CheckpointInfo",
]


# ---------------------------------------------------------------------------
# A turn: prompt, cancel, compact, steer
# ---------------------------------------------------------------------------


class TextBlockParams(TypedDict):
    type: Literal["text"]
    text: str


class SessionIdParams(TypedDict):
    sessionId: str


class _PromptRequired(TypedDict):
    sessionId: str
    contentBlocks: List[TextBlockParams]


class SessionPromptParams(_PromptRequired, total=False):
    outputSchema: Dict[str, Any]
    maxCostUsd: float
    #: W3C Trace Context of the caller's current span (``deepseek_harness._internal.tracing``).
    traceparent: str


class SessionPromptResponse(WireModel):
    """Result of ``session/prompt``: exactly ``status`` and ``reason``, and they must agree."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    status: TurnStatus
    reason: TurnEndReason

    @model_validator(mode="after")
    def _status_matches_reason(self) -> "SessionPromptResponse":
        expected = status_of(self.reason.kind)
        if self.status != expected:
            raise ValueError(
                f"status {self.status!r} does not match reason kind {self.reason.kind!r} "
                f"(expected {expected!r})"
            )
        return self


#: ``session/cancel`` and ``session/compact`` take the session's id only.
SessionCancelParams = SessionIdParams
SessionCompactParams = SessionIdParams


class SessionCancelResponse(WireModel):
    """Result of ``session/cancel``."""

    cancelled: bool


class SessionCompactResponse(WireModel):
    """Result of ``session/compact``: False when there was nothing to compact."""

    compacted: bool


class SessionSteerParams(TypedDict):
    """``session/steer``: a user message for the session's running turn."""

    sessionId: str
    contentBlocks: List[TextBlockParams]


class SessionSteerResponse(WireModel):
    """Result of ``session/steer``: True once the steer was recorded (a ``user/steer`` event);
    False when the session had no turn in flight, or its turn ended (cancelled, failed, out of
    steps or budget) before the steer could join it. Nothing is recorded for False."""

    steered: bool


# ---------------------------------------------------------------------------
# The answers to the bridge's questions: client tools, approvals, hooks
# ---------------------------------------------------------------------------


class SessionToolResultParams(WireModel):
    """Params of ``session/tool_result``: the answer to a ``tool/request``."""

    session_id: str
    call_id: str
    content: List[TextBlock]
    is_error: Optional[bool] = None


class SessionPermissionParams(WireModel):
    """Params of ``session/permission``: the answer to a ``permission/request``."""

    session_id: str
    request_id: str
    decision: Literal["allow", "deny"]
    message: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None


class SessionHookParams(WireModel):
    """Params of ``session/hook``: the answer to a ``hook/request``."""

    session_id: str
    hook_id: str
    block: Optional[str] = None
    context: Optional[str] = None
    content: Optional[List[TextBlock]] = None
    is_error: Optional[bool] = None
    continue_: Optional[str] = Field(default=None, alias="continue")


# ---------------------------------------------------------------------------
# Checkpoints and rewind
# ---------------------------------------------------------------------------


class _RewindRequired(TypedDict):
    sessionId: str
    turn: int


class SessionRewindParams(_RewindRequired, total=False):
    """Params of ``session/rewind``."""

    files: bool
    conversation: bool
    force: bool


class UnrestoredTurn(WireModel):
    """What a rewind could not put back of one turn: the writing ``tools`` no checkpoint covered
    (a ``files`` checkpoint: ``bash``, ``task``, client and MCP tools), and the ``paths`` whose
    previous content was not kept (``checkpoint/skipped``)."""

    turn: int
    tools: List[str] = Field(default_factory=list)
    paths: List[str] = Field(default_factory=list)


class RewindResult(WireModel):
    """Result of ``session/rewind``: workspace-relative paths written back (``restored``),
    created by the undone turns and removed (``removed``), changed by someone else since and
    left alone (``conflicts``: rewind again with ``force=True`` to overwrite them), and what
    could not be restored (``unrestored``)."""

    restored: List[str] = Field(default_factory=list)
    removed: List[str] = Field(default_factory=list)
    conflicts: List[str] = Field(default_factory=list)
    unrestored: List[UnrestoredTurn] = Field(default_factory=list)


class CheckpointInfo(WireModel):
    """One turn's checkpoint, as the session's ``checkpoint`` events record it (no method
    returns it: ``Session.checkpoints()`` reads them from the log): ``kind`` ``"git"`` or
    ``"files"``, the number of ``files`` it changed, and the writing tools it does not cover
    (``uncovered``). A rewind that changed files has one too, under a turn number of its own:
    ``rewind`` is the turn it went back to, and ``Session.rewind(turn, conversation=False)``
    undoes it (docs/checkpoints.md)."""

    turn: int
    kind: str
    files: int
    uncovered: List[str] = Field(default_factory=list)
    rewind: Optional[int] = None

"""Wire models: a pydantic v2 mirror of the harness-bridge protocol, version 1.

This module holds the session event envelope, the methods' responses and the notifications;
it re-exports the wire types kept in modules of their own, so that ``from
deepseek_harness.models import X`` works for every name: the base model and content blocks
(:mod:`.wire_model`), the turn end reason, status and usage (:mod:`.usage`).

Field names are snake_case in Python and camelCase on the wire (``input_tokens`` ↔
``inputTokens``); every model accepts either spelling and dumps the wire one with
``model_dump(by_alias=True)``.

Notifications are the hot path (a turn may stream hundreds of thousands of
``assistant/chunk`` events), so :class:`Notification` is a plain slotted object that keeps
the decoded dict and validates lazily, when a typed accessor is first used.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Literal, Optional, Type

from pydantic import ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from .mcp_servers import McpServerStatus
from .usage import TurnEndReason, TurnStatus, Usage, status_of
from .wire_model import ContentBlock, ReasoningBlock, TextBlock, ToolCallBlock, WireModel


__all__ = [
    "PROTOCOL_VERSION",
    "LIVE_ONLY_EVENT_TYPES",
    "TurnStatus",
    "PermissionMode",
    "WireModel",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "ContentBlock",
    "TurnEndReason",
    "Usage",
    "SessionEvent",
    "ServerInfo",
    "InitializeResponse",
    "SessionPromptResponse",
    "SessionCancelResponse",
    "SessionCompactResponse",
    "SessionEventParams",
    "SubagentStartedParams",
    "SubagentFinishedParams",
    "Notification",
    "status_of",
]

#: The protocol version this SDK speaks.
PROTOCOL_VERSION = 1

#: Event types that are streamed but never written to the durable log.
LIVE_ONLY_EVENT_TYPES = frozenset({"assistant/chunk"})

PermissionMode = Literal["read-only", "workspace-write", "full"]


# ---------------------------------------------------------------------------
# Session events
# ---------------------------------------------------------------------------


class SessionEvent(WireModel):
    """One session event. ``data`` is kept as the decoded dict (see PROTOCOL.md's table)."""

    type: str
    seq: int
    time: int
    data: Dict[str, Any] = Field(default_factory=dict)

    @property
    def live_only(self) -> bool:
        """True for events that are streamed but never logged (``assistant/chunk``)."""
        return self.type in LIVE_ONLY_EVENT_TYPES


# ---------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------


class RuntimeInfo(WireModel):
    """The Node.js the bridge runs on (``serverInfo.runtime``): the version the binary embeds
    (pinned by the project, e.g. ``"24.22.3"``) and the build's target."""

    node: str
    platform: str
    arch: str


class ServerInfo(WireModel):
    name: str
    version: str
    #: The bridge's runtime; ``None`` only from a bridge older than the field.
    runtime: Optional[RuntimeInfo] = None


class SandboxStatus(WireModel):
    """What confines ``bash`` in the bridge: ``"bubblewrap"``; ``"landlock"`` (the in-kernel
    Landlock + seccomp confinement, used where bubblewrap is absent or cannot run, with the
    kernel's ``landlock_abi``); or ``"none"`` with the ``reason`` (``full`` or ``read-only``
    mode, bash not offered, or no working sandbox — then every bash call in
    ``workspace-write`` fails closed with an error naming the fixes)."""

    bash: Literal["bubblewrap", "landlock", "none"]
    reason: Optional[str] = None
    landlock_abi: Optional[int] = None


class InitializeResponse(WireModel):
    """Result of ``initialize``."""

    server_info: ServerInfo
    protocol_version: int
    providers: List[str] = Field(default_factory=list)
    #: What confines bash; ``None`` only from a bridge older than the field.
    sandbox: Optional[SandboxStatus] = None
    #: Each MCP server's outcome; ``None`` when ``mcp_servers`` was not given.
    mcp_servers: Optional[List[McpServerStatus]] = None


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


class SessionCancelResponse(WireModel):
    """Result of ``session/cancel``."""

    cancelled: bool


class SessionCompactResponse(WireModel):
    """Result of ``session/compact``: False when there was nothing to compact."""

    compacted: bool


# ---------------------------------------------------------------------------
# Notifications
# ---------------------------------------------------------------------------


class SessionEventParams(WireModel):
    """Params of ``session.event``."""

    session_id: str
    event: SessionEvent


class SubagentStartedParams(WireModel):
    """Params of ``subagent.started``."""

    parent_session_id: str
    child_session_id: str


class SubagentFinishedParams(WireModel):
    """Params of ``subagent.finished``."""

    provider: str
    agent_id: str
    parent_session_id: str
    child_session_id: str
    status: str
    stop_reason: TurnEndReason
    last_assistant_message: Optional[List[Dict[str, Any]]] = None


_PARAMS_MODELS: Dict[str, Type[WireModel]] = {
    "session.event": SessionEventParams,
    "subagent.started": SubagentStartedParams,
    "subagent.finished": SubagentFinishedParams,
}


class Notification:
    """One server notification: ``method`` and its decoded ``payload`` (the params dict).

    Construction does no validation, so the streaming path stays cheap. Typed views are
    validated on first access and cached: :attr:`params` (the method's params model),
    :attr:`event` (the :class:`SessionEvent` of a ``session.event``).
    """

    __slots__ = ("method", "_payload", "_line", "_params")

    _params: Any  # set on first access of :attr:`params`

    def __init__(self, method: str, payload: Dict[str, Any]) -> None:
        self.method = method
        self._payload: Optional[Dict[str, Any]] = payload
        self._line: Optional[bytes] = None

    @classmethod
    def _undecoded(cls, method: str, line: bytes) -> "Notification":
        """A notification kept as its NDJSON line (already checked to be a valid frame), decoded
        on first access. For the chunks a :class:`TurnResult` keeps that nobody has looked at yet:
        Python's cyclic GC does not track bytes, while each decoded chunk is four dicts it
        traverses in every full collection (the measurement: bench/README.md, "Why the code does
        this")."""
        n = cls.__new__(cls)
        n.method = method
        n._payload = None
        n._line = line
        return n

    @property
    def payload(self) -> Dict[str, Any]:
        """The params dict, as decoded from the frame."""
        p = self._payload
        if p is None:
            assert self._line is not None
            try:
                p = json.loads(self._line)["params"]
            except (ValueError, RecursionError, KeyError, TypeError) as exc:
                # The line decoded once on the SDK's side already (that is how it got here), so
                # this takes a deeper call stack than that check had; a clear error, not a crash.
                from .errors import ProtocolError

                raise ProtocolError(f"could not decode a notification's payload ({type(exc).__name__}): "
                                    f"{self._line[:200]!r}") from exc
            self._payload = p
            self._line = None
        return p

    @payload.setter
    def payload(self, value: Dict[str, Any]) -> None:
        self._payload = value
        self._line = None

    # -- cheap accessors (no validation) ------------------------------------------------

    @property
    def session_id(self) -> Optional[str]:
        """The session this notification belongs to (the parent for ``subagent.*``)."""
        p = self.payload
        sid = p.get("sessionId")
        if sid is None:
            sid = p.get("parentSessionId")
        return sid if isinstance(sid, str) else None

    @property
    def event_type(self) -> Optional[str]:
        """The event ``type`` of a ``session.event``, else None."""
        if self.method != "session.event":
            return None
        ev = self.payload.get("event")
        return ev.get("type") if isinstance(ev, dict) else None

    # -- validated views ----------------------------------------------------------------

    @property
    def params(self) -> Any:
        """The payload validated against its method's model (the dict for unknown methods)."""
        try:
            return self._params
        except AttributeError:
            model = _PARAMS_MODELS.get(self.method)
            if model is None:
                self._params = self.payload
                return self._params
            try:
                self._params = model.model_validate(self.payload)
            except RecursionError as exc:  # nesting deeper than the stack allows: say so plainly
                from .errors import ProtocolError

                raise ProtocolError(f"a {self.method} notification is nested too deep to validate") from exc
            return self._params

    @property
    def event(self) -> Optional[SessionEvent]:
        """The validated :class:`SessionEvent` of a ``session.event``, else None."""
        if self.method != "session.event":
            return None
        return self.params.event

    def __repr__(self) -> str:
        return f"Notification(method={self.method!r}, payload={self.payload!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Notification):
            return NotImplemented
        return self.method == other.method and self.payload == other.payload

    __hash__ = None  # type: ignore[assignment]

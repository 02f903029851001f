"""Wire models: a pydantic v2 mirror of the harness-bridge protocol, version 1.

Field names are snake_case in Python and camelCase on the wire (``input_tokens`` ↔
``inputTokens``); every model accepts either spelling and dumps the wire one with
``model_dump(by_alias=True)``.

Notifications are the hot path (a turn may stream hundreds of thousands of
``assistant/chunk`` events), so :class:`Notification` is a plain slotted object that keeps
the decoded dict and validates lazily, when a typed accessor is first used.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from .mcp_servers import McpServerStatus

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

TurnStatus = Literal["ok", "error", "aborted"]
PermissionMode = Literal["read-only", "workspace-write", "full"]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, either spelling accepted, extras kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
    )

    def to_wire(self) -> Dict[str, Any]:
        """The wire form (camelCase keys, unset optional fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True)


# ---------------------------------------------------------------------------
# Content blocks
# ---------------------------------------------------------------------------


class TextBlock(WireModel):
    """Plain text; the only block a prompt may hold."""

    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(WireModel):
    """The model's reasoning (assistant content only)."""

    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallBlock(WireModel):
    """A tool call the model asked for (assistant content only)."""

    type: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    arguments: Dict[str, Any] = Field(default_factory=dict)
    #: Present only when the model sent arguments that were not a JSON object.
    raw_arguments: Optional[str] = None
    #: The model's valid arguments exactly as it streamed them, present only when that text is
    #: not the compact JSON of ``arguments``; the bridge sends it back as written.
    arguments_text: Optional[str] = None


ContentBlock = Union[TextBlock, ReasoningBlock, ToolCallBlock]


# ---------------------------------------------------------------------------
# Turn end reasons and usage
# ---------------------------------------------------------------------------


def status_of(kind: str) -> TurnStatus:
    """Maps a reason kind to a turn status: completed → ok, aborted → aborted, else error."""
    if kind == "completed":
        return "ok"
    if kind == "aborted":
        return "aborted"
    return "error"


class TurnEndReason(WireModel):
    """Why a turn ended.

    Known kinds: ``completed``, ``aborted``, ``max-tokens``, ``max-steps`` (``limit``),
    ``model-error`` (``message``, ``http_status``, ``code``), ``internal-error``
    (``message``), ``blocked`` (``message``: a prompt-submit hook's reason), ``budget``
    (``limit_usd``, ``cost_usd``: the prompt's ``max_cost_usd`` was reached). Unknown kinds are
    kept as they are (extra fields allowed) and map to
    status ``error``.
    """

    kind: str
    message: Optional[str] = None
    limit: Optional[int] = None
    http_status: Optional[int] = None
    code: Optional[str] = None
    limit_usd: Optional[float] = None
    cost_usd: Optional[float] = None

    @property
    def status(self) -> TurnStatus:
        """The status this reason maps to."""
        return status_of(self.kind)

    def describe(self) -> str:
        """The reason in one line, with every detail it carries: ``completed``, ``max-steps
        (limit 10)``, ``model-error (HTTP 401, code invalid_request_error): Authentication
        Fails, ...``. What a program prints when a turn did not go well."""
        details = [f"HTTP {self.http_status}"] if self.http_status is not None else []
        details += [f"code {self.code}"] if self.code else []
        details += [f"limit {self.limit}"] if self.limit is not None else []
        details += [f"spent ${self.cost_usd:.6f} of ${self.limit_usd:.6f}"] if self.limit_usd is not None and self.cost_usd is not None else []
        text = self.kind + (f" ({', '.join(details)})" if details else "")
        return f"{text}: {self.message}" if self.message else text


class Usage(WireModel):
    """Token usage of one model request, or summed over a turn."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: Optional[int] = None
    cache_hit_tokens: Optional[int] = None
    #: Input tokens not served from the prompt cache (DeepSeek's ``prompt_cache_miss_tokens``).
    cache_miss_tokens: Optional[int] = None
    #: What the request(s) cost in US dollars, when the model's prices are known (the bridge's
    #: table of DeepSeek's models, or ``prices=``); None otherwise, never a guess.
    cost_usd: Optional[float] = None

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented

        def opt(a: Optional[int], b: Optional[int]) -> Optional[int]:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=opt(self.reasoning_tokens, other.reasoning_tokens),
            cache_hit_tokens=opt(self.cache_hit_tokens, other.cache_hit_tokens),
            cache_miss_tokens=opt(self.cache_miss_tokens, other.cache_miss_tokens),
            cost_usd=None if self.cost_usd is None and other.cost_usd is None else (self.cost_usd or 0.0) + (other.cost_usd or 0.0),
        )


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


_PARAMS_MODELS = {
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

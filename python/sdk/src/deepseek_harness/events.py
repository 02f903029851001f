"""Typed events of a streamed turn: what ``Session.stream`` / ``AsyncSession.stream`` yield.

One model per session event type of the protocol (``user/message``, ``turn/start``,
``step/start``, ``assistant/chunk``, ``assistant/message``, ``tool/result``, ``turn/end``; the
client tools' and approvals' ``tool/request``, ``permission/request``,
``permission/decision``; structured output's ``output/reminder``; ``context/compacted``; the
hooks' ``hook/request`` and ``hook/decision``) and
per subagent notification (``subagent.started``, ``subagent.finished``). A session event's
``data`` fields sit on the event itself, next to ``session_id``, ``type``, ``seq`` and ``time``
(``ev.text``, not ``ev.data["chunk"]["text"]``). ``assistant/chunk`` has one subclass per chunk
kind (:class:`TextDeltaEvent`, :class:`ReasoningDeltaEvent`, :class:`ToolCallDeltaEvent`), so
``isinstance`` picks out text and reasoning deltas; their ``type`` stays ``"assistant/chunk"``,
as on the wire.

Anything else — an event type, chunk kind or notification method this SDK does not know, or
a known one whose data does not fit its model — becomes an :class:`UnknownEvent` holding the
notification's params dict untouched, so a newer bridge never breaks an older SDK's stream.

These models are built only for stream consumers, one per notification, by
:func:`event_from_notification`; the ``on_notification`` path never validates anything.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Dict, List, Literal, Optional, Type, Union

from pydantic import Field, ValidationError

from .models import Notification, ReasoningBlock, TextBlock, ToolCallBlock, TurnEndReason, Usage, WireModel

__all__ = [
    "TurnEvent",
    "BaseSessionEvent",
    "UserMessageEvent",
    "UserSteer",
    "UserSteerEvent",
    "TurnStartEvent",
    "StepStartEvent",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "AssistantChunkEvent",
    "TextDeltaEvent",
    "ReasoningDeltaEvent",
    "ToolCallDeltaEvent",
    "AssistantMessageEvent",
    "ToolResultEvent",
    "ToolRequestEvent",
    "PermissionRequestEvent",
    "PermissionDecisionEvent",
    "TurnEndEvent",
    "OutputReminderEvent",
    "ContextCompactedEvent",
    "CheckpointEvent",
    "CheckpointSkippedEvent",
    "SessionRewoundEvent",
    "HookRequestEvent",
    "HookDecisionEvent",
    "SubagentStartedEvent",
    "SubagentFinishedEvent",
    "UnknownEvent",
    "event_from_notification",
]

log = logging.getLogger("deepseek_harness")

# Content blocks: the known kinds as models, any other kind kept as its dict. left_to_right,
# because pydantic's default "smart" union would take every dict as the plain-dict member.
AssistantBlock = Annotated[
    Union[TextBlock, ReasoningBlock, ToolCallBlock, Dict[str, Any]], Field(union_mode="left_to_right")
]
ResultBlock = Annotated[Union[TextBlock, Dict[str, Any]], Field(union_mode="left_to_right")]


def _texts(blocks: List[Any], kind: Type[Any]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, kind))


class TurnEvent(WireModel):
    """Base of every event a turn stream yields (everything but the final ``TurnResult``)."""


class BaseSessionEvent(TurnEvent):
    """A ``session.event`` notification: the session it belongs to (a subagent's events carry
    the child's id), the event's ``type``, ``seq`` (strictly increasing within the session) and
    ``time`` (epoch ms); subclasses add the event's data fields."""

    session_id: str
    type: str
    seq: int
    time: int


class UserMessageEvent(BaseSessionEvent):
    """``user/message``: the prompt, as recorded."""

    type: Literal["user/message"] = "user/message"
    id: str
    content: List[ResultBlock] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return _texts(self.content, TextBlock)


class UserSteer(BaseSessionEvent):
    """``user/steer``: a user message added to the running turn by ``session.steer(...)``,
    as recorded (after the results of the step before it, before the next model request)."""

    type: Literal["user/steer"] = "user/steer"
    id: str
    content: List[ResultBlock] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return _texts(self.content, TextBlock)


#: The same class, named like the other events.
UserSteerEvent = UserSteer


class TurnStartEvent(BaseSessionEvent):
    """``turn/start``; ``output_schema`` is a structured turn's JSON Schema (None otherwise)."""

    type: Literal["turn/start"] = "turn/start"
    turn: int
    output_schema: Optional[Dict[str, Any]] = None


class StepStartEvent(BaseSessionEvent):
    """``step/start``: one model request begins."""

    type: Literal["step/start"] = "step/start"
    turn: int
    step: int


class TextDelta(WireModel):
    type: Literal["text-delta"] = "text-delta"
    text: str


class ReasoningDelta(WireModel):
    type: Literal["reasoning-delta"] = "reasoning-delta"
    text: str


class ToolCallDelta(WireModel):
    """A piece of a streamed tool call: ``index`` within the step; ``id`` and ``name`` when the
    model sent them with this piece; ``arguments_delta``, a piece of the JSON arguments."""

    type: Literal["tool-call-delta"] = "tool-call-delta"
    index: int
    id: Optional[str] = None
    name: Optional[str] = None
    arguments_delta: str = ""


class AssistantChunkEvent(BaseSessionEvent):
    """``assistant/chunk`` (live only, never in the durable log). Known chunk kinds come as the
    subclasses below; an unknown kind as this class, with ``chunk`` the raw dict."""

    type: Literal["assistant/chunk"] = "assistant/chunk"
    turn: int
    step: int
    chunk: Union[TextDelta, ReasoningDelta, ToolCallDelta, Dict[str, Any]]


class TextDeltaEvent(AssistantChunkEvent):
    """A piece of the assistant's answer text."""

    chunk: TextDelta

    @property
    def text(self) -> str:
        return self.chunk.text


class ReasoningDeltaEvent(AssistantChunkEvent):
    """A piece of the model's reasoning."""

    chunk: ReasoningDelta

    @property
    def text(self) -> str:
        return self.chunk.text


class ToolCallDeltaEvent(AssistantChunkEvent):
    """A piece of a tool call being streamed (the complete call is in ``assistant/message``)."""

    chunk: ToolCallDelta


class AssistantMessageEvent(BaseSessionEvent):
    """``assistant/message``: one model request's complete output. Its tool calls
    (:attr:`tool_calls`) are what the agent runs next, each answered by a ``tool/result``."""

    type: Literal["assistant/message"] = "assistant/message"
    id: str
    turn: int
    step: int
    content: List[AssistantBlock] = Field(default_factory=list)
    finish_reason: str
    usage: Optional[Usage] = None

    @property
    def text(self) -> str:
        """The text blocks, joined."""
        return _texts(self.content, TextBlock)

    @property
    def reasoning(self) -> str:
        """The reasoning blocks, joined."""
        return _texts(self.content, ReasoningBlock)

    @property
    def tool_calls(self) -> List[ToolCallBlock]:
        """The tool calls, in the model's order."""
        return [b for b in self.content if isinstance(b, ToolCallBlock)]


class ToolResultEvent(BaseSessionEvent):
    """``tool/result``: the outcome of the tool call ``call_id``."""

    type: Literal["tool/result"] = "tool/result"
    call_id: str
    name: str
    content: List[ResultBlock] = Field(default_factory=list)
    is_error: bool
    duration_ms: int

    @property
    def text(self) -> str:
        return _texts(self.content, TextBlock)


class ToolRequestEvent(BaseSessionEvent):
    """``tool/request``: the model called the client tool ``name``; the SDK runs it and answers
    (its ``tool/result`` follows)."""

    type: Literal["tool/request"] = "tool/request"
    call_id: str
    name: str
    arguments: Dict[str, Any] = Field(default_factory=dict)


class PermissionRequestEvent(BaseSessionEvent):
    """``permission/request``: the call ``call_id`` of tool ``name`` waits for approval
    (``approvals=``); ``can_use_tool`` receives this event and answers it."""

    type: Literal["permission/request"] = "permission/request"
    request_id: str
    call_id: str
    name: str
    arguments: Dict[str, Any] = Field(default_factory=dict)


class PermissionDecisionEvent(BaseSessionEvent):
    """``permission/decision``: how the request ``request_id`` was answered (``"allow"`` or
    ``"deny"``), by the client or by a timeout; ``arguments`` when an allow changed them."""

    type: Literal["permission/decision"] = "permission/decision"
    request_id: str
    decision: str
    message: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None


class TurnEndEvent(BaseSessionEvent):
    """``turn/end``: why the turn ended, and its usage summed over its steps."""

    type: Literal["turn/end"] = "turn/end"
    turn: int
    reason: TurnEndReason
    usage: Optional[Usage] = None
    #: A structured turn's valid answer (JSON, as it came); None otherwise.
    output: Any = None


class OutputReminderEvent(BaseSessionEvent):
    """``output/reminder``: the model answered a structured turn in plain text, and ``text`` went
    back to it (as a user-role message, not a new turn) telling it to answer with the schema's
    tool; ``attempt`` counts its answers from 1 (three end the turn ``output-invalid``)."""

    type: Literal["output/reminder"] = "output/reminder"
    turn: int
    attempt: int
    text: str


class ContextCompactedEvent(BaseSessionEvent):
    """``context/compacted``: the history before ``kept_from_seq`` was replaced by ``summary``
    (docs/long-sessions.md). The token counts are estimates; ``trigger`` is ``"auto"``,
    ``"refused"`` (the model refused the request as too long) or ``"request"`` (``compact()``)."""

    type: Literal["context/compacted"] = "context/compacted"
    summary: str
    tokens_before: int
    tokens_after: int
    kept_from_seq: int
    turn: int
    trigger: str


class CheckpointEvent(BaseSessionEvent):
    """``checkpoint``: what turn ``turn`` recorded so that :meth:`Session.rewind
    <deepseek_harness.Session.rewind>` can undo it (docs/checkpoints.md): ``files`` workspace
    files it changed; ``kind`` ``"git"`` (a snapshot of the work tree: bash's changes covered)
    or ``"files"`` (the file tools' writes only; ``uncovered`` names the other writing tools
    that ran, whose changes a rewind cannot undo). ``rewind`` is set on a rewind's own
    checkpoint: a rewind that changed files kept their state first under a turn number of its
    own (``turn``), and ``rewind`` is the turn it went back to; ``rewind(turn,
    conversation=False)`` undoes it."""

    type: Literal["checkpoint"] = "checkpoint"
    turn: int
    files: int
    kind: str
    uncovered: Optional[List[str]] = None
    rewind: Optional[int] = None


class CheckpointSkippedEvent(BaseSessionEvent):
    """``checkpoint/skipped``: the previous content of ``paths`` was not kept (``reason``
    ``"size-cap"``: the session's checkpoint cap was reached; ``"unreadable"``), so a rewind
    cannot put them back."""

    type: Literal["checkpoint/skipped"] = "checkpoint/skipped"
    turn: int
    paths: List[str]
    reason: str


class SessionRewoundEvent(BaseSessionEvent):
    """``session/rewound``: the history was cut back to before ``turn`` (the log keeps the rest)."""

    type: Literal["session/rewound"] = "session/rewound"
    turn: int


class HookRequestEvent(BaseSessionEvent):
    """``hook/request``: the turn waits at the hook point ``hook`` (``"prompt-submit"``,
    ``"post-tool"`` or ``"stop"``) for its answer; the ``Hooks`` callback of that point receives
    this event. Its fields by hook: prompt-submit ``content`` (the prompt); post-tool
    ``call_id``, ``name``, ``arguments``, ``content`` and ``is_error`` (the tool's result, before
    it is recorded); stop ``text`` (the model's answer). The others are None."""

    type: Literal["hook/request"] = "hook/request"
    hook_id: str
    hook: str
    content: Optional[List[ResultBlock]] = None
    call_id: Optional[str] = None
    name: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None
    is_error: Optional[bool] = None
    text: Optional[str] = None

    @property
    def content_text(self) -> str:
        """The text of ``content``: the prompt (prompt-submit) or the tool's output (post-tool)."""
        return _texts(self.content or [], TextBlock)


class HookDecisionEvent(BaseSessionEvent):
    """``hook/decision``: how the hook request ``hook_id`` was answered: the answer's fields as
    given, or ``skipped`` (why no answer came: the deadline, a closed input, a bridge that
    stopped). A cancelled turn records none."""

    type: Literal["hook/decision"] = "hook/decision"
    hook_id: str
    hook: str
    skipped: Optional[str] = None
    block: Optional[str] = None
    context: Optional[str] = None
    content: Optional[List[ResultBlock]] = None
    is_error: Optional[bool] = None
    continue_: Optional[str] = Field(default=None, alias="continue")


class SubagentStartedEvent(TurnEvent):
    """``subagent.started``: a ``task`` tool call created the child session ``child_session_id``
    (its events follow, with that ``session_id``)."""

    parent_session_id: str
    child_session_id: str

    @property
    def session_id(self) -> str:
        """The parent session (the one the stream belongs to)."""
        return self.parent_session_id


class SubagentFinishedEvent(TurnEvent):
    """``subagent.finished``: the child's turn settled (``status`` and ``stop_reason``, as for a
    prompt), with the content of its last assistant message."""

    provider: str
    agent_id: str
    parent_session_id: str
    child_session_id: str
    status: str
    stop_reason: TurnEndReason
    last_assistant_message: Optional[List[AssistantBlock]] = None

    @property
    def session_id(self) -> str:
        """The parent session (the one the stream belongs to)."""
        return self.parent_session_id

    @property
    def text(self) -> str:
        """The text of the child's last assistant message."""
        return _texts(self.last_assistant_message or [], TextBlock)


class UnknownEvent(TurnEvent):
    """A notification this SDK has no model for, passed through untouched: ``params`` is the
    notification's params dict itself (for a ``session.event``: ``{sessionId, event}``)."""

    method: str
    params: Dict[str, Any]

    @property
    def type(self) -> Optional[str]:
        """The event type of a ``session.event``, else None."""
        ev = self.params.get("event") if self.method == "session.event" else None
        return ev.get("type") if isinstance(ev, dict) else None

    @property
    def session_id(self) -> Optional[str]:
        sid = self.params.get("sessionId", self.params.get("parentSessionId"))
        return sid if isinstance(sid, str) else None


_SESSION_EVENTS: Dict[str, Type[BaseSessionEvent]] = {
    "user/message": UserMessageEvent,
    "turn/start": TurnStartEvent,
    "step/start": StepStartEvent,
    "assistant/chunk": AssistantChunkEvent,
    "assistant/message": AssistantMessageEvent,
    "tool/result": ToolResultEvent,
    "tool/request": ToolRequestEvent,
    "permission/request": PermissionRequestEvent,
    "permission/decision": PermissionDecisionEvent,
    "turn/end": TurnEndEvent,
    "output/reminder": OutputReminderEvent,
    "context/compacted": ContextCompactedEvent,
    "user/steer": UserSteer,
    "checkpoint": CheckpointEvent,
    "checkpoint/skipped": CheckpointSkippedEvent,
    "session/rewound": SessionRewoundEvent,
    "hook/request": HookRequestEvent,
    "hook/decision": HookDecisionEvent,
}
_CHUNKS: Dict[str, Type[AssistantChunkEvent]] = {
    "text-delta": TextDeltaEvent,
    "reasoning-delta": ReasoningDeltaEvent,
    "tool-call-delta": ToolCallDeltaEvent,
}
_NOTIFICATIONS: Dict[str, Type[TurnEvent]] = {
    "subagent.started": SubagentStartedEvent,
    "subagent.finished": SubagentFinishedEvent,
}


def event_from_notification(n: Notification) -> TurnEvent:
    """The typed event of one notification (an :class:`UnknownEvent` when there is none)."""
    method = n.method
    payload = n.payload
    cls: Optional[Type[TurnEvent]]
    if method == "session.event":
        ev = payload.get("event")
        if type(ev) is not dict:
            return UnknownEvent.model_construct(method=method, params=payload)
        cls = _SESSION_EVENTS.get(ev.get("type"))  # type: ignore[arg-type]
        if cls is None:
            return UnknownEvent.model_construct(method=method, params=payload)
        data = ev.get("data")
        fields = dict(data) if type(data) is dict else {}
        if cls is AssistantChunkEvent:
            chunk = fields.get("chunk")
            kind = chunk.get("type") if type(chunk) is dict else None
            cls = _CHUNKS.get(kind, AssistantChunkEvent)  # type: ignore[arg-type]
        # The envelope wins over a data field of the same name (there is none today).
        fields["sessionId"] = payload.get("sessionId")
        fields["type"] = ev.get("type")
        fields["seq"] = ev.get("seq")
        fields["time"] = ev.get("time")
    else:
        cls = _NOTIFICATIONS.get(method)
        if cls is None:
            return UnknownEvent.model_construct(method=method, params=payload)
        fields = payload
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        log.warning("a %s notification does not fit %s; passing it through as UnknownEvent: %s",
                    method, cls.__name__, exc)
        return UnknownEvent.model_construct(method=method, params=payload)
    except RecursionError:
        # A payload nested deeper than the stack allows (the model controls tool arguments):
        # passed through untyped rather than raised into run()/stream().
        log.warning("a %s notification is nested too deep for %s; passing it through as UnknownEvent",
                    method, cls.__name__)
        return UnknownEvent.model_construct(method=method, params=payload)

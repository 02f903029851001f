"""The core events of a streamed turn: what every turn streams, whatever features it uses.

``user/message``, ``turn/start``, ``step/start``, ``assistant/chunk`` (one subclass per chunk
kind), ``assistant/message``, ``tool/result``, ``turn/end``, and the subagent notifications
(``subagent.started``, ``subagent.finished``), with the bases every event derives from
(:class:`TurnEvent`, :class:`BaseSessionEvent`) and :class:`UnknownEvent`, what anything without
a model streams as. The events of the features layered on a turn (client tools and approvals,
hooks, steering, checkpoints, compaction, structured output) are in :mod:`.feature_events`;
:mod:`.event_types` maps each wire event type to its class.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import Field

from .base import AssistantBlock, ReasoningBlock, ResultBlock, TextBlock, ToolCallBlock, WireModel
from .base import joined_text as _texts
from .usage import TurnEndReason, Usage

__all__ = [
    "TurnEvent",
    "BaseSessionEvent",
    "UserMessageEvent",
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
    "TurnEndEvent",
    "SubagentStartedEvent",
    "SubagentFinishedEvent",
    "UnknownEvent",
]

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



class TurnEndEvent(BaseSessionEvent):
    """``turn/end``: why the turn ended, and its usage summed over its steps."""

    type: Literal["turn/end"] = "turn/end"
    turn: int
    reason: TurnEndReason
    usage: Optional[Usage] = None
    #: A structured turn's valid answer (JSON, as it came); None otherwise.
    output: Any = None



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
    notification's params dict itself (for a ``session.event``: ``{sessionId, event}``). Anything
    else too: an event type, chunk kind or notification method this SDK does not know, or a
    known one whose data does not fit its model, so a newer bridge never breaks an older SDK's
    stream."""

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

"""The events of the features layered on a turn, apart from the core events every turn streams
(:mod:`.turn_events`) so that each side stays one readable concept.

Client tools and approvals (``tool/request``, ``permission/request``,
``permission/decision``), steering (``user/steer``), structured output (``output/reminder``),
compaction (``context/compacted``), checkpoints and rewind (``checkpoint``,
``checkpoint/skipped``, ``session/rewound``) and hooks (``hook/request``, ``hook/decision``).
:mod:`.event_types` maps each wire event type to its class.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional

from pydantic import Field

from .base import ResultBlock, TextBlock
from .base import joined_text as _texts
from .turn_events import BaseSessionEvent

__all__ = [
    "ToolRequestEvent",
    "PermissionRequestEvent",
    "PermissionDecisionEvent",
    "UserSteer",
    "UserSteerEvent",
    "OutputReminderEvent",
    "ContextCompactedEvent",
    "CheckpointEvent",
    "CheckpointSkippedEvent",
    "SessionRewoundEvent",
    "HookRequestEvent",
    "HookDecisionEvent",
]


# ---------------------------------------------------------------------------
# Client tools and approvals
# ---------------------------------------------------------------------------


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



# ---------------------------------------------------------------------------
# Steering
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Structured output and compaction
# ---------------------------------------------------------------------------


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



# ---------------------------------------------------------------------------
# Checkpoints and rewind
# ---------------------------------------------------------------------------


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



# ---------------------------------------------------------------------------
# Hooks
# ---------------------------------------------------------------------------


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


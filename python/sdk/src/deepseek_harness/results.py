"""The outcome of a turn: :class:`TurnResult`, and what a turn stream yields (:data:`StreamItem`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Union

from .notification import Notification
from .wire import SessionEvent, TurnEndReason, TurnEvent, TurnStatus, Usage

__all__ = ["TurnResult", "StreamItem", "final_response_of", "usage_of", "output_of"]


@dataclass(frozen=True)
class TurnResult:
    """The outcome of one turn.

    Attributes:
        session_id: the session the turn ran in.
        status: ``"ok"``, ``"error"`` or ``"aborted"``, from the ``session/prompt`` response.
        reason: the :class:`TurnEndReason`, from the same response.
        final_response: the text blocks of the turn's last ``assistant/message``, joined
            (``""`` when there is none).
        events: the turn's durable events of this session, in order (no ``assistant/chunk``).
        notifications: every notification of the session and its subagents during the turn,
            chunks included. When no callback watched the turn, a chunk's ``payload`` is
            decoded when first read.
        usage: the turn's token usage (from ``turn/end``, else summed over the assistant
            messages); None when the bridge reported none.
        output: a structured turn's answer (``run(..., output_schema=...)`` or
            ``output_type=...``): the value of ``turn/end.output``, parsed into an instance of
            ``output_type`` when one was given; None when the turn had no schema or ended
            without a valid value (``reason.kind == "output-invalid"``).
    """

    session_id: str
    status: TurnStatus
    reason: TurnEndReason
    final_response: str
    events: List[SessionEvent] = field(default_factory=list)
    notifications: List[Notification] = field(default_factory=list)
    usage: Optional[Usage] = None
    output: Any = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def cost_usd(self) -> Optional[float]:
        """What the turn cost in US dollars (``turn/end.usage.costUsd``, the sum of its model
        requests'); None when the model's prices are unknown (never a guess). With the built-in
        DeepSeek table it is the peak-hour price, an upper bound (docs/turn-control.md)."""
        return self.usage.cost_usd if self.usage is not None else None


def final_response_of(events: Sequence[SessionEvent]) -> str:
    """The text blocks of the last ``assistant/message`` among ``events``, joined."""
    for ev in reversed(events):
        if ev.type == "assistant/message":
            content = ev.data.get("content") or []
            return "".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
    return ""


def output_of(events: Sequence[SessionEvent]) -> Any:
    """The ``output`` of the last ``turn/end`` among ``events`` (None when it has none)."""
    for ev in reversed(events):
        if ev.type == "turn/end":
            return ev.data.get("output")
    return None


def usage_of(events: Sequence[SessionEvent]) -> Optional[Usage]:
    """The usage of ``turn/end`` when present, else the sum over ``assistant/message`` usages."""
    for ev in reversed(events):
        if ev.type == "turn/end" and isinstance(ev.data.get("usage"), dict):
            return Usage.model_validate(ev.data["usage"])
    total: Optional[Usage] = None
    for ev in events:
        if ev.type == "assistant/message" and isinstance(ev.data.get("usage"), dict):
            u = Usage.model_validate(ev.data["usage"])
            total = u if total is None else total + u
    return total


#: What a turn stream yields: typed events, then the :class:`TurnResult` as the last item.
StreamItem = Union[TurnEvent, TurnResult]

"""The friendly surface: :class:`DeepSeekHarness`, :class:`Session`, :class:`TurnResult`."""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .client import HarnessClient, NotificationCallback
from .models import (
    LIVE_ONLY_EVENT_TYPES,
    InitializeResponse,
    Notification,
    SessionEvent,
    TextBlock,
    TurnEndReason,
    TurnStatus,
    Usage,
)

__all__ = ["DeepSeekHarness", "Session", "TurnResult", "new_session_id", "final_response_of", "usage_of"]

PromptInput = Union[str, Iterable[Union[Mapping[str, Any], TextBlock]]]


def new_session_id() -> str:
    """A fresh session id (32 hex digits; matches ``[A-Za-z0-9._:-]{1,128}``)."""
    return uuid.uuid4().hex


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
            chunks included.
        usage: the turn's token usage (from ``turn/end``, else summed over the assistant
            messages); None when the bridge reported none.
    """

    session_id: str
    status: TurnStatus
    reason: TurnEndReason
    final_response: str
    events: List[SessionEvent] = field(default_factory=list)
    notifications: List[Notification] = field(default_factory=list)
    usage: Optional[Usage] = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def final_response_of(events: Sequence[SessionEvent]) -> str:
    """The text blocks of the last ``assistant/message`` among ``events``, joined."""
    for ev in reversed(events):
        if ev.type == "assistant/message":
            content = ev.data.get("content") or []
            return "".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
    return ""


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


class DeepSeekHarness:
    """A harness-bridge process, initialized for one workspace, provider and model.

    Use it as a context manager (entering starts the bridge and sends ``initialize``), or call
    :meth:`start` and :meth:`close`. :meth:`run` also starts it on first use.

    Args:
        provider: ``"deepseek"`` (needs ``DEEPSEEK_API_KEY``), ``"openai"``, ``"scripted"``.
        model: the model name (for ``scripted``: ``"demo"`` or a script file path).
        cwd: the workspace of every session; default: the current directory at start.
        session_root: where the bridge keeps durable session logs (``--session-root``).
        env: variables added to the bridge's environment (e.g. ``{"DEEPSEEK_API_KEY": ...}``).
        bridge_bin: the executable; default: found automatically (see the README).
        max_tokens, max_steps, permission_mode, tools, instructions: sent with ``initialize``.
        request_timeout_seconds: timeout of each request, a whole turn included; None: none.
        shutdown_timeout_seconds: per step of :meth:`close` (see :meth:`HarnessClient.close`).
        log_level: the bridge's ``--log-level``.
    """

    def __init__(
        self,
        provider: str = "deepseek",
        model: str = "deepseek-v4-flash",
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        session_root: Optional[Union[str, "os.PathLike[str]"]] = None,
        env: Optional[Mapping[str, str]] = None,
        bridge_bin: Optional[Union[str, "os.PathLike[str]"]] = None,
        max_tokens: Optional[int] = None,
        max_steps: Optional[int] = None,
        permission_mode: Optional[str] = None,
        tools: Optional[Sequence[str]] = None,
        instructions: Optional[str] = None,
        request_timeout_seconds: Optional[float] = None,
        shutdown_timeout_seconds: float = 5.0,
        log_level: Optional[str] = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.cwd = cwd
        self.max_tokens = max_tokens
        self.max_steps = max_steps
        self.permission_mode = permission_mode
        self.tools = list(tools) if tools is not None else None
        self.instructions = instructions
        self._client = HarnessClient(
            bridge_bin,
            session_root=session_root,
            log_level=log_level,
            env=env,
            request_timeout_seconds=request_timeout_seconds,
            shutdown_timeout_seconds=shutdown_timeout_seconds,
        )
        self._start_lock = threading.Lock()
        self._initialized: Optional[InitializeResponse] = None

    @property
    def client(self) -> HarnessClient:
        """The underlying :class:`HarnessClient`."""
        return self._client

    @property
    def initialize_response(self) -> Optional[InitializeResponse]:
        return self._initialized

    def start(self) -> "DeepSeekHarness":
        """Starts the bridge and initializes it. Idempotent; closes the bridge if initialize fails."""
        with self._start_lock:
            if self._initialized is not None:
                return self
            self._client.start()
            try:
                self._initialized = self._client.initialize(
                    self.cwd if self.cwd is not None else os.getcwd(),
                    self.provider,
                    self.model,
                    max_tokens=self.max_tokens,
                    max_steps=self.max_steps,
                    permission_mode=self.permission_mode,
                    tools=self.tools,
                    instructions=self.instructions,
                )
            except BaseException:
                self._client.close()
                raise
            return self

    def close(self) -> None:
        """Shuts the bridge down (see :meth:`HarnessClient.close`). Idempotent."""
        self._client.close()

    def __enter__(self) -> "DeepSeekHarness":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start_session(self, session_id: Optional[str] = None) -> "Session":
        """A handle on a session (a new id when none is given; an existing one is resumed)."""
        return Session(self, session_id or new_session_id())

    def run(
        self,
        input: PromptInput,
        session_id: Optional[str] = None,
        on_notification: Optional[NotificationCallback] = None,
    ) -> TurnResult:
        """Runs one turn (in a new session unless ``session_id`` is given) and returns its result."""
        return self._run(session_id or new_session_id(), input, on_notification)

    def cancel(self, session_id: str) -> bool:
        """Cancels the session's turn in flight; True when there was one."""
        return self._client.session_cancel(session_id)

    def _run(self, session_id: str, input: PromptInput, on_notification: Optional[NotificationCallback]) -> TurnResult:
        self.start()
        notifications: List[Notification] = []
        durable: List[Dict[str, Any]] = []
        append = notifications.append

        def collect(n: Notification) -> None:
            append(n)
            if n.method == "session.event":
                p = n.payload
                ev = p.get("event")
                if p.get("sessionId") == session_id and isinstance(ev, dict) and ev.get("type") not in LIVE_ONLY_EVENT_TYPES:
                    durable.append(ev)
            if on_notification is not None:
                on_notification(n)

        response = self._client.session_prompt(session_id, input, collect)
        events = [SessionEvent.model_validate(ev) for ev in durable]
        return TurnResult(
            session_id=session_id,
            status=response.status,
            reason=response.reason,
            final_response=final_response_of(events),
            events=events,
            notifications=notifications,
            usage=usage_of(events),
        )


class Session:
    """One conversation: successive :meth:`run` calls continue it."""

    def __init__(self, harness: DeepSeekHarness, session_id: str) -> None:
        self.harness = harness
        self.session_id = session_id

    @property
    def id(self) -> str:
        return self.session_id

    def run(self, input: PromptInput, on_notification: Optional[NotificationCallback] = None) -> TurnResult:
        """Runs one turn of this session."""
        return self.harness._run(self.session_id, input, on_notification)

    def cancel(self) -> bool:
        """Cancels this session's turn in flight; True when there was one."""
        return self.harness.cancel(self.session_id)

    def __repr__(self) -> str:
        return f"Session({self.session_id!r})"

"""A compatibility alias: the names ``deepseek_harness.models`` has always exported, the same
objects as in :mod:`deepseek_harness.wire` (where every wire type is defined) and
:mod:`deepseek_harness.notification`. New code imports from ``deepseek_harness`` or
``deepseek_harness.wire``; nothing is defined here."""

from __future__ import annotations

from .notification import Notification
from .wire import (
    LIVE_ONLY_EVENT_TYPES,
    PROTOCOL_VERSION,
    ContentBlock,
    InitializeResponse,
    McpServerStatus,
    PermissionMode,
    ReasoningBlock,
    RuntimeInfo,
    SandboxStatus,
    ServerInfo,
    SessionCancelResponse,
    SessionCompactResponse,
    SessionEvent,
    SessionEventParams,
    SessionPromptResponse,
    SubagentFinishedParams,
    SubagentStartedParams,
    TextBlock,
    ToolCallBlock,
    TurnEndReason,
    TurnStatus,
    Usage,
    WireModel,
    status_of,
)

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
    "RuntimeInfo",
    "SandboxStatus",
    "McpServerStatus",
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

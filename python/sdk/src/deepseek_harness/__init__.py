"""deepseek_harness: the Python SDK of harness-bridge, a DeepSeek coding-agent runtime.

High level::

    from deepseek_harness import DeepSeekHarness

    with DeepSeekHarness(provider="scripted", model="demo") as harness:  # or options=HarnessOptions(...)
        result = harness.run("What is in README.md?")
        print(result.status, result.final_response)

Streaming (typed events as they arrive, then the TurnResult)::

    for item in harness.start_session().stream("Explain this repository"):
        if isinstance(item, TextDeltaEvent):
            print(item.text, end="")

asyncio: :class:`AsyncDeepSeekHarness` / :class:`AsyncSession` (``await session.run(...)``,
``async for item in session.stream(...)``), on the same core as the blocking API.

Low level: :class:`HarnessClient` (requests, notifications, subscriptions).
"""

from ._binary import find_bridge_binary
from ._meta import __version__
from .api import DeepSeekHarness, Session, StreamItem, TurnResult, TurnStream, new_session_id
from .async_api import AsyncDeepSeekHarness, AsyncSession, AsyncTurnStream
from .client import HarnessClient, NotificationSubscription
from .client_tools import Allow, ClientTool, Deny, PermissionResult, tool
from .hooks import Hooks, PostToolAnswer, PromptSubmitAnswer, StopAnswer
from .errors import (
    BridgeNotFoundError,
    ErrorCode,
    HarnessError,
    InvalidParamsError,
    JsonRpcError,
    NotInitializedError,
    ProtocolError,
    ProviderUnavailableError,
    RequestTimeoutError,
    SessionBusyError,
    ShuttingDownError,
    TransportClosedError,
)
from .events import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    BaseSessionEvent,
    ReasoningDelta,
    ReasoningDeltaEvent,
    StepStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextDelta,
    TextDeltaEvent,
    ToolCallDelta,
    ToolCallDeltaEvent,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    ToolRequestEvent,
    ToolResultEvent,
    TurnEndEvent,
    ContextCompactedEvent,
    CheckpointEvent,
    CheckpointSkippedEvent,
    SessionRewoundEvent,
    HookDecisionEvent,
    HookRequestEvent,
    OutputReminderEvent,
    TurnEvent,
    TurnStartEvent,
    UnknownEvent,
    UserMessageEvent,
    UserSteer,
    UserSteerEvent,
    event_from_notification,
)
from .turn_control import Prices, SessionSteerResponse
from .options import HarnessOptions
from .checkpoints import CheckpointInfo, RewindResult, UnrestoredTurn
from .sessions import SessionDeleteResponse, SessionForkResponse, SessionInfo, SessionListResponse, SessionReadResponse
from .mcp_servers import McpHttpServer, McpServerConfig, McpServerStatus, McpStdioServer
from .models import (
    PROTOCOL_VERSION,
    ContentBlock,
    InitializeResponse,
    RuntimeInfo,
    SandboxStatus,
    Notification,
    ReasoningBlock,
    SessionEvent,
    SessionPromptResponse,
    TextBlock,
    ToolCallBlock,
    TurnEndReason,
    Usage,
)

__all__ = [
    "__version__",
    "PROTOCOL_VERSION",
    # high level
    "DeepSeekHarness",
    "HarnessOptions",
    "Session",
    "TurnResult",
    "TurnStream",
    "StreamItem",
    "new_session_id",
    # client tools and approvals
    "tool",
    "ClientTool",
    "Allow",
    "Deny",
    "PermissionResult",
    # hooks
    "Hooks",
    "PromptSubmitAnswer",
    "PostToolAnswer",
    "StopAnswer",
    # asyncio
    "AsyncDeepSeekHarness",
    "AsyncSession",
    "AsyncTurnStream",
    # stream events
    "TurnEvent",
    "BaseSessionEvent",
    "UserMessageEvent",
    "UserSteer",
    "UserSteerEvent",
    "Prices",
    "SessionSteerResponse",
    "TurnStartEvent",
    "StepStartEvent",
    "AssistantChunkEvent",
    "TextDeltaEvent",
    "ReasoningDeltaEvent",
    "ToolCallDeltaEvent",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "AssistantMessageEvent",
    "ToolResultEvent",
    "ToolRequestEvent",
    "PermissionRequestEvent",
    "PermissionDecisionEvent",
    "TurnEndEvent",
    "ContextCompactedEvent",
    "CheckpointEvent",
    "CheckpointSkippedEvent",
    "SessionRewoundEvent",
    "CheckpointInfo",
    "RewindResult",
    "UnrestoredTurn",
    "OutputReminderEvent",
    "HookRequestEvent",
    "HookDecisionEvent",
    "SubagentStartedEvent",
    "SubagentFinishedEvent",
    "UnknownEvent",
    "event_from_notification",
    # low level
    "HarnessClient",
    "NotificationSubscription",
    "find_bridge_binary",
    # models
    "ContentBlock",
    "TextBlock",
    "ReasoningBlock",
    "ToolCallBlock",
    "TurnEndReason",
    "Usage",
    "SessionEvent",
    "InitializeResponse",
    "RuntimeInfo",
    "SandboxStatus",
    "McpServerStatus",
    "McpStdioServer",
    "McpHttpServer",
    "McpServerConfig",
    "SessionPromptResponse",
    "Notification",
    # the sessions API
    "SessionInfo",
    "SessionListResponse",
    "SessionReadResponse",
    "SessionForkResponse",
    "SessionDeleteResponse",
    # errors
    "ErrorCode",
    "HarnessError",
    "JsonRpcError",
    "SessionBusyError",
    "NotInitializedError",
    "ShuttingDownError",
    "ProviderUnavailableError",
    "InvalidParamsError",
    "TransportClosedError",
    "RequestTimeoutError",
    "BridgeNotFoundError",
    "ProtocolError",
]

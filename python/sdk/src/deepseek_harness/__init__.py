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

Every type of the wire (results, events, notification params) is defined in
:mod:`deepseek_harness.wire`; the public ones are exported here too, the same objects.
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
    BridgeStartTimeoutError,
    ErrorCode,
    HarnessError,
    InvalidParamsError,
    JsonRpcError,
    NotInitializedError,
    NotUtf8Error,
    OpenFileLimitError,
    ProcessLimitError,
    ProtocolError,
    ProviderUnavailableError,
    RequestTimeoutError,
    RequestTooLargeError,
    SessionBusyError,
    ShuttingDownError,
    TransportClosedError,
    UnsendableRequestError,
)
from .events import event_from_notification
from .options import HarnessOptions
from .notification import Notification
# ``deepseek_harness.models``, the compatibility alias, stays an attribute of the package after a
# plain ``import deepseek_harness``, as it was when it defined the types.
from . import models
from .wire import (
    PROTOCOL_VERSION,
    AssistantChunkEvent,
    AssistantMessageEvent,
    BaseSessionEvent,
    CheckpointEvent,
    CheckpointInfo,
    CheckpointSkippedEvent,
    ContentBlock,
    ContextCompactedEvent,
    HookDecisionEvent,
    HookRequestEvent,
    InitializeResponse,
    McpHttpServer,
    McpServerConfig,
    McpServerStatus,
    McpStdioServer,
    OutputReminderEvent,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    Prices,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningDeltaEvent,
    RewindResult,
    RuntimeInfo,
    SandboxStatus,
    SessionDeleteResponse,
    SessionEvent,
    SessionForkResponse,
    SessionInfo,
    SessionListResponse,
    SessionPromptResponse,
    SessionReadResponse,
    SessionRewoundEvent,
    SessionSteerResponse,
    StepStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextBlock,
    TextDelta,
    TextDeltaEvent,
    ToolCallBlock,
    ToolCallDelta,
    ToolCallDeltaEvent,
    ToolRequestEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEndReason,
    TurnEvent,
    TurnStartEvent,
    UnknownEvent,
    UnrestoredTurn,
    Usage,
    UserMessageEvent,
    UserSteer,
    UserSteerEvent,
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
    "OpenFileLimitError",
    "ProcessLimitError",
    "RequestTimeoutError",
    "BridgeStartTimeoutError",
    "UnsendableRequestError",
    "RequestTooLargeError",
    "NotUtf8Error",
    "BridgeNotFoundError",
    "ProtocolError",
]

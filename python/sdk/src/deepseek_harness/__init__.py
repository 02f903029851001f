"""deepseek_harness: the Python SDK of harness-bridge, a DeepSeek coding-agent runtime.

High level::

    from deepseek_harness import DeepSeekHarness

    with DeepSeekHarness(provider="scripted", model="demo") as harness:
        result = harness.run("What is in README.md?")
        print(result.status, result.final_response)

Low level: :class:`HarnessClient` (requests, notifications, subscriptions).
"""

from ._binary import find_bridge_binary
from ._meta import __version__
from .api import DeepSeekHarness, Session, TurnResult, new_session_id
from .client import HarnessClient, NotificationSubscription
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
from .models import (
    PROTOCOL_VERSION,
    ContentBlock,
    InitializeResponse,
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
    "Session",
    "TurnResult",
    "new_session_id",
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
    "SessionPromptResponse",
    "Notification",
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

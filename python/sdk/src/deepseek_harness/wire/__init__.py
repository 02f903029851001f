"""The wire's types: every shape that crosses between the SDK and the bridge, in one package.

The Python mirror of the bridge's ``src/protocol/`` (docs/PROTOCOL.md is the contract): pydantic
models for what the SDK reads (results, events, notification params) and for the answers it
builds from a user's values; ``TypedDict``\\ s for the params it builds as plain dicts. Field names
are snake_case in Python and camelCase on the wire; every model accepts either spelling and dumps
the wire one with ``to_wire()`` / ``model_dump(by_alias=True)``. tests/test_wire_shape.py holds
these types equal to the bridge's, field by field.

By concept, each module building only on those before it:

* :mod:`.base`: ``WireModel``, the content blocks (the leaf);
* :mod:`.usage`: a turn's end reason, its status, token usage and cost;
* :mod:`.initialize`: the protocol version, what ``initialize`` declares and answers;
* :mod:`.methods`: the params and results of a turn's requests, the answers to the bridge's
  questions, rewind;
* :mod:`.notification_params`: the session event envelope and each notification's params;
* :mod:`.sessions_api`: ``session/list``, ``read``, ``fork``, ``delete``;
* :mod:`.turn_events`, :mod:`.feature_events`: the typed events a turn streams;
* :mod:`.event_types`: the class of each wire event type.

This package imports nothing from the rest of the SDK (tests/test_module_boundaries.py): the
behaviour built on these types (decoding a notification into its event, the requests, the
callbacks) imports from here. :class:`deepseek_harness.Notification`, a frame as it arrived, is
the router's: it keeps the raw payload and validates it lazily into :data:`NOTIFICATION_PARAMS`.
``from deepseek_harness import X`` gives every public type too.
"""

from .base import AssistantBlock, ContentBlock, ReasoningBlock, ResultBlock, TextBlock, ToolCallBlock, WireModel
from .event_types import CHUNK_TYPES, NOTIFICATION_EVENTS, SESSION_EVENT_TYPES
from .feature_events import (
    CheckpointEvent,
    CheckpointSkippedEvent,
    ContextCompactedEvent,
    HookDecisionEvent,
    HookRequestEvent,
    OutputReminderEvent,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    SessionRewoundEvent,
    ToolRequestEvent,
    UserSteer,
    UserSteerEvent,
)
from .initialize import (
    PROTOCOL_VERSION,
    ClientToolSpec,
    InitializeResponse,
    McpHttpServer,
    McpServerConfig,
    McpServerStatus,
    McpStdioServer,
    PermissionMode,
    Prices,
    RuntimeInfo,
    SandboxStatus,
    ServerInfo,
)
from .methods import (
    CheckpointInfo,
    RewindResult,
    SessionCancelParams,
    SessionCancelResponse,
    SessionCompactParams,
    SessionCompactResponse,
    SessionHookParams,
    SessionIdParams,
    SessionPermissionParams,
    SessionPromptParams,
    SessionPromptResponse,
    SessionRewindParams,
    SessionSteerParams,
    SessionSteerResponse,
    SessionToolResultParams,
    TextBlockParams,
    UnrestoredTurn,
)
from .notification_params import (
    LIVE_ONLY_EVENT_TYPES,
    NOTIFICATION_PARAMS,
    SessionEvent,
    SessionEventParams,
    SubagentFinishedParams,
    SubagentStartedParams,
)
from .sessions_api import (
    READ_LIMIT_DEFAULT,
    READ_LIMIT_MAX,
    SessionDeleteParams,
    SessionDeleteResponse,
    SessionForkParams,
    SessionForkResponse,
    SessionInfo,
    SessionListParams,
    SessionListResponse,
    SessionReadParams,
    SessionReadResponse,
)
from .turn_events import (
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
    ToolResultEvent,
    TurnEndEvent,
    TurnEvent,
    TurnStartEvent,
    UnknownEvent,
    UserMessageEvent,
)
from .usage import TurnEndReason, TurnStatus, Usage, status_of

__all__ = [
    # base
    "WireModel", "TextBlock", "ReasoningBlock", "ToolCallBlock", "ContentBlock", "AssistantBlock", "ResultBlock",
    # usage
    "TurnStatus", "status_of", "TurnEndReason", "Usage",
    # initialize
    "PROTOCOL_VERSION", "PermissionMode", "ClientToolSpec", "Prices", "McpStdioServer", "McpHttpServer",
    "McpServerConfig", "McpServerStatus", "RuntimeInfo", "ServerInfo", "SandboxStatus", "InitializeResponse",
    # methods
    "TextBlockParams", "SessionIdParams", "SessionPromptParams", "SessionPromptResponse", "SessionCancelParams",
    "SessionCancelResponse", "SessionCompactParams", "SessionCompactResponse", "SessionSteerParams",
    "SessionSteerResponse", "SessionToolResultParams", "SessionPermissionParams", "SessionHookParams",
    "SessionRewindParams", "UnrestoredTurn", "RewindResult", "CheckpointInfo",
    # notifications
    "LIVE_ONLY_EVENT_TYPES", "SessionEvent", "SessionEventParams", "SubagentStartedParams",
    "SubagentFinishedParams", "NOTIFICATION_PARAMS",
    # sessions API
    "READ_LIMIT_DEFAULT", "READ_LIMIT_MAX", "SessionListParams", "SessionReadParams", "SessionForkParams",
    "SessionDeleteParams", "SessionInfo", "SessionListResponse", "SessionReadResponse", "SessionForkResponse",
    "SessionDeleteResponse",
    # events
    "TurnEvent", "BaseSessionEvent", "UserMessageEvent", "TurnStartEvent", "StepStartEvent", "TextDelta",
    "ReasoningDelta", "ToolCallDelta", "AssistantChunkEvent", "TextDeltaEvent", "ReasoningDeltaEvent",
    "ToolCallDeltaEvent", "AssistantMessageEvent", "ToolResultEvent", "TurnEndEvent", "SubagentStartedEvent",
    "SubagentFinishedEvent", "UnknownEvent", "ToolRequestEvent", "PermissionRequestEvent",
    "PermissionDecisionEvent", "UserSteer", "UserSteerEvent", "OutputReminderEvent", "ContextCompactedEvent",
    "CheckpointEvent", "CheckpointSkippedEvent", "SessionRewoundEvent", "HookRequestEvent", "HookDecisionEvent",
    # event types
    "SESSION_EVENT_TYPES", "CHUNK_TYPES", "NOTIFICATION_EVENTS",
]

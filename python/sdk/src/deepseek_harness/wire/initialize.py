"""``initialize`` on the wire: the protocol version, what the SDK declares (client tools, prices,
MCP servers in the wire's own shape) and what the bridge answers (its name, version and runtime,
the bash sandbox, the providers, each MCP server's outcome).

The other settings ``initialize`` sends are plain values, named with their wire names in
:data:`deepseek_harness.options.INITIALIZE_FIELDS` with how each is converted.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .base import WireModel

__all__ = [
    "PROTOCOL_VERSION",
    "PermissionMode",
    "ClientToolSpec",
    "Prices",
    "McpStdioServer",
    "McpHttpServer",
    "McpServerConfig",
    "McpServerStatus",
    "RuntimeInfo",
    "ServerInfo",
    "SandboxStatus",
    "InitializeResponse",
]

#: The protocol version this SDK speaks.
PROTOCOL_VERSION = 1

PermissionMode = Literal["read-only", "workspace-write", "full"]


# ---------------------------------------------------------------------------
# What the SDK declares
# ---------------------------------------------------------------------------


class ClientToolSpec(WireModel):
    """An entry of ``initialize.clientTools``."""

    name: str
    description: str
    parameters: Dict[str, Any]
    read_only: Optional[bool] = None


_PRICE_WIRE_NAMES = {
    "input_per_mtok": "inputPerMTok", "cache_hit_per_mtok": "cacheHitPerMTok", "output_per_mtok": "outputPerMTok",
}


class Prices(WireModel):
    """A model's prices in US dollars per million tokens (``initialize.prices``): they replace
    the bridge's built-in table (DeepSeek's models, docs/turn-control.md). ``cache_hit_per_mtok``
    absent: cache hits are priced as input."""

    # The wire spells "MTok" with a capital T, which camelCase generation would not; an alias
    # generator (not Field(alias=...)) keeps the Python names the constructor's for type checkers.
    model_config = ConfigDict(alias_generator=lambda name: _PRICE_WIRE_NAMES[name], populate_by_name=True, extra="allow")

    input_per_mtok: float
    cache_hit_per_mtok: Optional[float] = None
    output_per_mtok: float


class _Timeouts(TypedDict, total=False):
    #: How long connecting may take (start, MCP ``initialize``, ``tools/list``); default 30000.
    startupTimeoutMs: int
    #: How long one tool call may take before it is cancelled and answered with an error; default 120000.
    toolTimeoutMs: int


class _Command(TypedDict):
    command: str


class McpStdioServer(_Command, _Timeouts, total=False):
    """A server the bridge starts (one process group, which dies with the bridge) and speaks to
    over its stdin and stdout: ``{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}``.
    ``env`` is added to the bridge's environment less its secrets; ``cwd`` is relative to the
    workspace (default: the workspace)."""

    args: List[str]
    env: Dict[str, str]
    cwd: str


class _Url(TypedDict):
    url: str


class McpHttpServer(_Url, _Timeouts, total=False):
    """A server reached over MCP's streamable HTTP transport: ``{"url": "http://127.0.0.1:8000/mcp"}``;
    ``headers`` go with every request (e.g. ``Authorization``)."""

    headers: Dict[str, str]


#: One entry of ``mcp_servers``: names match ``[A-Za-z0-9-]{1,32}``, at most 32 servers.
McpServerConfig = Union[McpStdioServer, McpHttpServer]


# ---------------------------------------------------------------------------
# What the bridge answers
# ---------------------------------------------------------------------------


class McpServerStatus(BaseModel):
    """One entry of :attr:`InitializeResponse.mcp_servers`, in the order the servers were given."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str
    status: Literal["connected", "failed"]
    #: The names the model is offered (``mcp__<server>__<tool>``); empty when failed.
    tools: List[str]
    #: Why the server failed (only then).
    error: Optional[str] = None


class RuntimeInfo(WireModel):
    """The Node.js the bridge runs on (``serverInfo.runtime``): the version the binary embeds
    (pinned by the project, e.g. ``"24.22.3"``) and the build's target."""

    node: str
    platform: str
    arch: str


class ServerInfo(WireModel):
    name: str
    version: str
    #: The bridge's runtime; ``None`` only from a bridge older than the field.
    runtime: Optional[RuntimeInfo] = None


class SandboxStatus(WireModel):
    """What confines ``bash`` in the bridge: ``"bubblewrap"``; ``"landlock"`` (the in-kernel
    Landlock + seccomp confinement, used where bubblewrap is absent or cannot run, with the
    kernel's ``landlock_abi``); or ``"none"`` with the ``reason`` (``full`` or ``read-only``
    mode, bash not offered, or no working sandbox — then every bash call in
    ``workspace-write`` fails closed with an error naming the fixes)."""

    bash: Literal["bubblewrap", "landlock", "none"]
    reason: Optional[str] = None
    landlock_abi: Optional[int] = None


class InitializeResponse(WireModel):
    """Result of ``initialize``."""

    server_info: ServerInfo
    protocol_version: int
    providers: List[str] = Field(default_factory=list)
    #: What confines bash; ``None`` only from a bridge older than the field.
    sandbox: Optional[SandboxStatus] = None
    #: Each MCP server's outcome; ``None`` when ``mcp_servers`` was not given.
    mcp_servers: Optional[List[McpServerStatus]] = None

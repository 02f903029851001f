"""MCP servers (the wire's ``initialize.mcpServers``): their configuration, passed as the
``mcp_servers`` option in the wire's own shape, and the status ``initialize`` reports for each.

The bridge starts every server at ``initialize`` (in parallel; ``initialize`` answers once each
one is connected or has failed) and offers their tools to the model as
``mcp__<server>__<tool>``. A server that fails fails neither ``initialize`` nor the bridge: its
status says why. See docs/PROTOCOL.md, "MCP servers", for every rule.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Mapping, Optional, TypedDict, Union

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["McpStdioServer", "McpHttpServer", "McpServerConfig", "McpServerStatus", "mcp_servers_wire"]


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


class McpServerStatus(BaseModel):
    """One entry of :attr:`InitializeResponse.mcp_servers`, in the order the servers were given."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str
    status: Literal["connected", "failed"]
    #: The names the model is offered (``mcp__<server>__<tool>``); empty when failed.
    tools: List[str]
    #: Why the server failed (only then).
    error: Optional[str] = None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def mcp_servers_wire(servers: Mapping[str, Any]) -> Dict[str, Any]:
    """The wire form of ``mcp_servers``: plain dicts and lists (a copy), checked by the bridge
    (a bad entry is a -32602 naming it)."""
    if not isinstance(servers, Mapping):
        raise TypeError(f"mcp_servers must be a mapping of server name to its configuration, not {type(servers).__name__}")
    wire = _plain(servers)
    assert isinstance(wire, dict)
    return wire

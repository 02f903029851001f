"""MCP servers (the wire's ``initialize.mcpServers``): their configuration, passed as the
``mcp_servers`` option in the wire's own shape, and the status ``initialize`` reports for each.

The bridge starts every server at ``initialize`` (in parallel; ``initialize`` answers once each
one is connected or has failed) and offers their tools to the model as
``mcp__<server>__<tool>``. A server that fails fails neither ``initialize`` nor the bridge: its
status says why. See docs/PROTOCOL.md, "MCP servers", for every rule.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from .wire import McpHttpServer, McpServerConfig, McpServerStatus, McpStdioServer

# The configuration and status types are defined in deepseek_harness.wire (``initialize``); they
# stay importable from here, the same objects.
__all__ = ["McpStdioServer", "McpHttpServer", "McpServerConfig", "McpServerStatus", "mcp_servers_wire"]


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

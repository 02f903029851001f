"""Wire models of client tools and approvals (docs/PROTOCOL.md "Client tools and approvals"):
what the SDK sends in ``initialize.clientTools``, ``session/tool_result`` and
``session/permission``. The events the bridge sends about them are in feature_events.py
(re-exported by events.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional

from .models import TextBlock, WireModel

__all__ = ["ClientToolSpec", "SessionToolResultParams", "SessionPermissionParams"]


class ClientToolSpec(WireModel):
    """An entry of ``initialize.clientTools``."""

    name: str
    description: str
    parameters: Dict[str, Any]
    read_only: Optional[bool] = None


class SessionToolResultParams(WireModel):
    """Params of ``session/tool_result``: the answer to a ``tool/request``."""

    session_id: str
    call_id: str
    content: List[TextBlock]
    is_error: Optional[bool] = None


class SessionPermissionParams(WireModel):
    """Params of ``session/permission``: the answer to a ``permission/request``."""

    session_id: str
    request_id: str
    decision: Literal["allow", "deny"]
    message: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None

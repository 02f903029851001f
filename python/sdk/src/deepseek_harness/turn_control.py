"""Turn control (PROTOCOL.md "Turn control"): steering a running turn
(``session/steer``), the model's prices (``initialize.prices``) and what they cost.

The wire types are in :mod:`deepseek_harness.wire`: ``Prices``, ``session/steer``'s params and
result, the ``user/steer`` event (:class:`~deepseek_harness.wire.UserSteer`), a usage's
``costUsd`` and the ``budget`` end reason. ``DeepSeekHarness`` / ``AsyncDeepSeekHarness`` sessions call
:func:`steer` / :func:`asteer`; both are safe to call from another thread or task while the
session's ``run()`` waits (the connection is thread-safe and the bridge answers a steer on its
own, once it is recorded or refused).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Mapping, Optional, Union

from ._internal.connection import Connection, arequest, request, validate
from ._internal.prompt import PromptInput, content_blocks
from .wire import Prices, SessionSteerParams, SessionSteerResponse

# Prices and SessionSteerResponse are defined in deepseek_harness.wire; they stay importable from
# here, the same objects.
__all__ = ["Prices", "SessionSteerResponse", "prices_wire", "steer", "asteer"]


def prices_wire(value: Union[Prices, Mapping[str, Any]]) -> Dict[str, Any]:
    """The wire form of ``prices=``: a :class:`Prices`, or a dict with the wire's names
    (``inputPerMTok``, ``cacheHitPerMTok``, ``outputPerMTok``) sent as it is: the bridge checks
    the values and answers -32602 (naming the field) to bad ones."""
    return value.to_wire() if isinstance(value, Prices) else dict(value)


def _params(session_id: str, input: PromptInput) -> SessionSteerParams:
    return {"sessionId": session_id, "contentBlocks": content_blocks(input)}


def steer(conn: Connection, session_id: str, input: PromptInput, timeout: Optional[float] = None) -> bool:
    """``session/steer``, blocking until the bridge recorded or refused it."""
    result = request(conn, "session/steer", _params(session_id, input), timeout=timeout)
    return bool(validate(SessionSteerResponse, result, "session/steer").steered)


async def asteer(conn: Connection, session_id: str, input: PromptInput, timeout: Optional[float] = None) -> bool:
    """``session/steer``, awaiting the bridge's answer."""
    result = await arequest(conn, "session/steer", _params(session_id, input), timeout=timeout)
    return bool(validate(SessionSteerResponse, result, "session/steer").steered)


class SessionCosts:
    """What the turns a harness ran cost, per session (``Session.cost_usd``): the sum of their
    ``TurnResult.cost_usd``; a session none of whose turns was priced has None. Thread-safe
    (sync sessions run turns on any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: Dict[str, float] = {}

    def add(self, session_id: str, cost_usd: Optional[float]) -> None:
        if cost_usd is None:
            return
        with self._lock:
            self._totals[session_id] = self._totals.get(session_id, 0.0) + cost_usd

    def of(self, session_id: str) -> Optional[float]:
        with self._lock:
            return self._totals.get(session_id)

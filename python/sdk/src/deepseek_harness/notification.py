"""A server notification as it arrived: :class:`Notification`, its method and its params dict,
validated lazily into the wire's models (:data:`deepseek_harness.wire.NOTIFICATION_PARAMS`).

Notifications are the hot path (a turn may stream hundreds of thousands of ``assistant/chunk``
events), so :class:`Notification` is a plain slotted object that keeps the decoded dict (or the
undecoded line) and validates only when a typed accessor is first used. It lives beside the wire
package, not in it, because that decoding is the SDK's behaviour: a payload that cannot be
decoded or validated raises :class:`~deepseek_harness.ProtocolError`.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from .errors import ProtocolError
from .wire import NOTIFICATION_PARAMS, SessionEvent

__all__ = ["Notification"]


class Notification:
    """One server notification: ``method`` and its decoded ``payload`` (the params dict).

    Construction does no validation, so the streaming path stays cheap. Typed views are
    validated on first access and cached: :attr:`params` (the method's params model),
    :attr:`event` (the :class:`SessionEvent` of a ``session.event``).
    """

    __slots__ = ("method", "_payload", "_line", "_params")

    _params: Any  # set on first access of :attr:`params`

    def __init__(self, method: str, payload: Dict[str, Any]) -> None:
        self.method = method
        self._payload: Optional[Dict[str, Any]] = payload
        self._line: Optional[bytes] = None

    @classmethod
    def _undecoded(cls, method: str, line: bytes) -> "Notification":
        """A notification kept as its NDJSON line (already checked to be a valid frame), decoded
        on first access. For the chunks a :class:`TurnResult` keeps that nobody has looked at yet:
        Python's cyclic GC does not track bytes, while each decoded chunk is four dicts it
        traverses in every full collection (the measurement: bench/README.md, "Why the code does
        this")."""
        n = cls.__new__(cls)
        n.method = method
        n._payload = None
        n._line = line
        return n

    @property
    def payload(self) -> Dict[str, Any]:
        """The params dict, as decoded from the frame."""
        p = self._payload
        if p is None:
            assert self._line is not None
            try:
                p = json.loads(self._line)["params"]
            except (ValueError, RecursionError, KeyError, TypeError) as exc:
                # The line decoded once on the SDK's side already (that is how it got here), so
                # this takes a deeper call stack than that check had; a clear error, not a crash.
                raise ProtocolError(f"could not decode a notification's payload ({type(exc).__name__}): "
                                    f"{self._line[:200]!r}") from exc
            self._payload = p
            self._line = None
        return p

    @payload.setter
    def payload(self, value: Dict[str, Any]) -> None:
        self._payload = value
        self._line = None

    # -- cheap accessors (no validation) ------------------------------------------------

    @property
    def session_id(self) -> Optional[str]:
        """The session this notification belongs to (the parent for ``subagent.*``)."""
        p = self.payload
        sid = p.get("sessionId")
        if sid is None:
            sid = p.get("parentSessionId")
        return sid if isinstance(sid, str) else None

    @property
    def event_type(self) -> Optional[str]:
        """The event ``type`` of a ``session.event``, else None."""
        if self.method != "session.event":
            return None
        ev = self.payload.get("event")
        return ev.get("type") if isinstance(ev, dict) else None

    # -- validated views ----------------------------------------------------------------

    @property
    def params(self) -> Any:
        """The payload validated against its method's model (the dict for unknown methods)."""
        try:
            return self._params
        except AttributeError:
            model = NOTIFICATION_PARAMS.get(self.method)
            if model is None:
                self._params = self.payload
                return self._params
            try:
                self._params = model.model_validate(self.payload)
            except RecursionError as exc:  # nesting deeper than the stack allows: say so plainly
                raise ProtocolError(f"a {self.method} notification is nested too deep to validate") from exc
            return self._params

    @property
    def event(self) -> Optional[SessionEvent]:
        """The validated :class:`SessionEvent` of a ``session.event``, else None."""
        if self.method != "session.event":
            return None
        return self.params.event

    def __repr__(self) -> str:
        return f"Notification(method={self.method!r}, payload={self.payload!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Notification):
            return NotImplemented
        return self.method == other.method and self.payload == other.payload

    __hash__ = None  # type: ignore[assignment]

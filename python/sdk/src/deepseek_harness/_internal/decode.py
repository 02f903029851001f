"""Decoding frames: the one guard every frame passes, and the fast path's batch decoding.

The reader thread routes a ``session.event`` line by the session id in its prefix
(:data:`FAST_PREFIX`) without decoding it, when no subscription needs decoded notifications.
Its consumer decodes it on its own thread (:func:`deliver`). Raw bytes are not tracked by the
garbage collector, so batches waiting between the threads cost nothing to keep. Every other
line is decoded by the reader. Both paths apply :func:`notification_params`: a frame is a
notification only when it is an object with a string ``method``, object ``params`` and no
``id``; anything else is dropped with a warning saying why (:func:`drop`).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Dict, List, Optional

from ..notification import Notification

__all__ = [
    "FAST_PREFIX",
    "FAST_LEN",
    "DECODE_ERRORS",
    "NotificationCallback",
    "notification_params",
    "drop",
    "why",
    "loads_lines",
    "deliver",
    "decode_batch",
]

log = logging.getLogger("deepseek_harness")

#: The bridge serialises session.event notifications with this exact prefix.
FAST_PREFIX = b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"'
FAST_LEN = len(FAST_PREFIX)

NotificationCallback = Callable[[Notification], None]

# What decoding a frame may raise: ValueError (not JSON, bad UTF-8) and RecursionError (nested
# deeper than the interpreter's recursion limit, about 1 000 levels: the nesting of a tool's
# arguments or output is model-controlled). Such a frame is dropped with a warning like any other
# corrupt line; it must never reach a caller as an exception nor kill the reader thread.
DECODE_ERRORS = (ValueError, RecursionError)

BAD = object()  # a line that cannot be decoded


def why(exc: BaseException) -> str:
    return "nested too deep" if isinstance(exc, RecursionError) else "not JSON"


def notification_params(msg: Any) -> Optional[Dict[str, Any]]:
    """The ``params`` of a notification frame, else None. A frame shaped like a server request
    (``method`` and ``id``) is not one: this client never answers requests, and such a frame
    must never be taken for a response either. This is the guard of both paths; it runs once
    per notification, so it only looks at three keys."""
    if type(msg) is dict and "id" not in msg:
        params = msg.get("params")
        if type(params) is dict and type(msg.get("method")) is str:
            return params
    return None


def drop(line: bytes, msg: Any) -> None:
    """Logs why a decoded frame (``msg``, or ``BAD``) that is neither a notification nor a
    response is dropped."""
    if msg is BAD:
        log.warning("dropping a line that cannot be decoded (not JSON, or nested too deep): %r", line[:200])
    elif type(msg) is not dict:
        log.warning("dropping a frame that is not an object: %r", line[:200])
    elif msg.get("method") is None:
        log.warning("dropping an unrecognised frame: %r", line[:200])
    elif "id" in msg:
        log.warning("dropping a request-shaped frame from the bridge: method=%r id=%r", msg.get("method"), msg.get("id"))
    else:
        log.warning("dropping a malformed notification: %r", line[:200])


def loads_lines(lines: List[bytes]) -> List[Any]:
    """Decodes fast-path lines, one JSON value per line (``BAD`` for a line that is not JSON).

    ``json.loads`` has a fixed cost per call (encoding detection, decoding the bytes, a scanner
    set-up) as large as the parse of a short chunk notification itself, so the lines are parsed
    together, as one JSON array (the measurement: bench/README.md, "Why the code does this").
    That is exact only if every line is
    one JSON value: a line that is not valid on its own either breaks the array (a syntax error)
    or changes the number of values (``{..},{..}`` on one line, a string cut by a line break), so
    anything but exactly ``len(lines)`` values falls back to one call per line.
    """
    loads = json.loads
    if len(lines) > 1:
        try:
            values = loads(b"[" + b",".join(lines) + b"]")
        except DECODE_ERRORS:
            pass
        else:
            if len(values) == len(lines):
                return values
    out: List[Any] = []
    for line in lines:
        try:
            out.append(loads(line))
        except DECODE_ERRORS:
            out.append(BAD)
    return out


def deliver(batch: List[Any], callback: NotificationCallback, keep_chunk: Optional[NotificationCallback] = None) -> None:
    """Hands one batch of a prompt's inbox to ``callback`` in order, decoding the fast path's
    raw lines on the way (each run of consecutive raw lines with one parse, see
    :func:`loads_lines`), with the guard of :func:`notification_params`. This is the hot loop
    of every notification.

    With ``keep_chunk``, the ``assistant/chunk`` events among the raw lines go to it instead,
    as notifications that keep their line undecoded (see ``Notification._undecoded``): for a
    consumer that only keeps them."""
    guard = notification_params
    count = len(batch)
    i = 0
    while i < count:
        item = batch[i]
        if type(item) is not bytes:
            callback(item)
            i += 1
            continue
        j = i + 1
        while j < count and type(batch[j]) is bytes:
            j += 1
        lines = batch if i == 0 and j == count else batch[i:j]
        for line, msg in zip(lines, loads_lines(lines)):
            params = guard(msg)
            if params is None:
                drop(line, msg)
                continue
            method = msg["method"]
            if keep_chunk is not None and _is_chunk(method, params):
                keep_chunk(Notification._undecoded(method, line))
            else:
                callback(Notification(method, params))
        i = j


def _is_chunk(method: str, params: Dict[str, Any]) -> bool:
    if method != "session.event":
        return False
    event = params.get("event")
    return type(event) is dict and event.get("type") == "assistant/chunk"


def decode_batch(batch: List[Any]) -> List[Notification]:
    """One batch of a prompt's inbox as :class:`Notification` objects, in order."""
    out: List[Notification] = []
    deliver(batch, out.append)
    return out

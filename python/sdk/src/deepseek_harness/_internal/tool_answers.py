"""The answers to ``tool/request`` and ``permission/request``, as the dispatcher
(tool_dispatch.py) sends them: every job ends in exactly one answer the bridge takes, whatever
the user's function gave — its result or an error result, an allow or a deny — made from types
and texts that always travel (UTF-8, JSON without NaN, under the bridge's line limit)."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Literal, Optional, Tuple

from pydantic import ValidationError

from ..client_tools import Allow, ClientTool, Deny, tool_output_text, validation_error_text
from ..events import event_from_notification
from ..notification import Notification
from ..wire import PermissionRequestEvent, SessionPermissionParams, SessionToolResultParams, TextBlock
from .outgoing import SURROGATE

__all__ = ["Answer", "Unanswerable", "answered", "ask", "call_tool", "permission_answer", "tool_answer", "tool_result",
           "not_json", "answer_budget", "MAX_ANSWER_BYTES"]

Answer = Tuple[str, Dict[str, Any]]  # method and params of the request that answers

#: The largest answer sent (its params as JSON), whatever the bridge's line limit.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
#: What a request's line holds besides its params: ``{"jsonrpc":"2.0","id":N,"method":"session/permission","params":}``
#: and the newline, with room to spare (84 bytes with a 20-digit id).
ENVELOPE_BYTES = 128


def answer_budget(line_limit: int) -> int:
    """The most bytes an answer's params may take as JSON for its line to fit the bridge's
    ``--max-line-bytes``: the bridge drops a longer line, and with it the answer (the call would
    wait out the client-tool timeout), so a longer tool result is cut to fit, with a note
    saying so, and any other answer that does not fit becomes its fallback (an error, a deny)."""
    return min(MAX_ANSWER_BYTES, line_limit - ENVELOPE_BYTES)




class _BadArguments(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _NoSuchTool(Exception):
    pass


def call_tool(tool: Optional[ClientTool], name: Any, arguments: Any) -> Any:
    if tool is None:
        raise _NoSuchTool(f"this Python process has no client tool named {name!r}")
    try:
        kwargs = tool.validate(arguments)
    except ValidationError as exc:
        raise _BadArguments(validation_error_text(tool.name, exc)) from None
    return tool.fn(**kwargs)


def answered(finish: Callable[[Any, Optional[BaseException]], Answer], value: Any, exc: Optional[BaseException]) -> Answer:
    """`finish`'s answer, or its own fallback when building it failed (an exception whose str()
    raises, a value that cannot be sent): every job answers exactly once."""
    try:
        return finish(value, exc)
    except BaseException as err:  # noqa: BLE001 - the answer must go out whatever the user's objects do
        # An Unanswerable says why itself (an answer too large to send); anything else only by its type.
        why = err if isinstance(err, Unanswerable) else Unanswerable(f"{type(err).__name__} while making the answer")
        return finish(None, why)


class Unanswerable(Exception):
    """The answer could not be made from what the function gave; its text names only types."""


def tool_answer(sid: str, call_id: str, name: Any, value: Any, exc: Optional[BaseException], *,
                budget: int = MAX_ANSWER_BYTES) -> Answer:
    if exc is None:
        try:
            return "session/tool_result", tool_result(sid, call_id, tool_output_text(value), False, budget)
        except Exception as err:  # noqa: BLE001 - a value pydantic cannot encode
            exc = TypeError(f"{name} returned a {type(value).__name__}, which cannot be sent as JSON: {err}")
    if isinstance(exc, Unanswerable):
        text = f"the client tool {name} gave nothing that can be sent back: {exc.args[0]}"
    elif isinstance(exc, (_BadArguments, _NoSuchTool)):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return "session/tool_result", tool_result(sid, call_id, text, True, budget)


def tool_result(sid: str, call_id: str, text: str, is_error: bool, budget: int = MAX_ANSWER_BYTES) -> Dict[str, Any]:
    """The params of a ``session/tool_result`` holding ``text``, cut so that they take at most
    ``budget`` bytes as JSON."""
    # What cannot travel as UTF-8 (a lone surrogate: a file name's undecodable byte) becomes U+FFFD.
    text = SURROGATE.sub("\ufffd", text)

    def params(text: str) -> Dict[str, Any]:
        return SessionToolResultParams(session_id=sid, call_id=call_id, content=[TextBlock(text=text)],
                                       is_error=True if is_error else None).to_wire()

    # A character is at most 6 bytes as JSON (`\u001f`): most results need no measuring.
    if len(text) * 6 <= budget // 2:
        return params(text)
    # The text's own quotes are in both sizes: the room is what the rest of the params leaves.
    room = budget - _wire_size(params("")) + 2
    return params(cut_to_fit(text, room, "result"))


def cut_to_fit(text: str, room: int, what: str) -> str:
    """``text`` if it takes at most ``room`` bytes as a JSON string, else its start with a note
    saying it was cut, together within ``room`` (nothing at all when not even the note fits)."""
    size = _wire_size(text)
    if size <= room:
        return text
    keep = int(len(text) * room / size)
    while True:
        cut = f"{text[:keep]}\n[cut by the SDK: this {what} was {len(text)} characters, {size} bytes as JSON; " \
              f"the first {keep} are above]"
        cut_size = _wire_size(cut)
        if cut_size <= room:
            return cut
        if keep == 0:
            return ""
        # Proportionally less, and at least one character less: a text whose start is denser in
        # bytes than its average (control characters are 6 bytes each) still ends within room.
        keep = min(keep - 1, int(keep * room / cut_size * 0.95))


def _wire_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def ask(callback: Callable[[PermissionRequestEvent], Any], n: Notification) -> Any:
    event = event_from_notification(n)
    if not isinstance(event, PermissionRequestEvent):
        raise ValueError(f"a permission/request the SDK cannot read: {n.payload!r}")
    return callback(event)


def permission_answer(sid: str, request_id: str, value: Any, exc: Optional[BaseException], *,
                      budget: int = MAX_ANSWER_BYTES) -> Answer:
    decision: Literal["allow", "deny"] = "deny"
    message: Optional[str] = None
    arguments: Optional[Dict[str, Any]] = None
    if isinstance(exc, Unanswerable):
        message = f"the approval callback's answer could not be sent ({exc.args[0]}); not run"
    elif exc is not None:
        message = f"the approval callback failed ({type(exc).__name__}: {exc}); not run"
    elif isinstance(value, Allow):
        if value.arguments is None:
            decision = "allow"
        elif not isinstance(value.arguments, dict):
            message = "the approval callback allowed with arguments that are not a dict; not run"
        elif (why := not_json(value.arguments, budget)) is not None:
            message = f"the approval callback allowed with arguments that cannot be sent ({why}); not run"
        else:
            decision, arguments = "allow", value.arguments
    elif isinstance(value, Deny):
        if not isinstance(value.message, str):
            message = f"the approval callback denied with a {type(value.message).__name__} for a message; not run"
        elif value.message:
            message = value.message
        # else None: the bridge says "the client denied this <tool> call".
    else:
        message = f"the approval callback returned {type(value).__name__}, not Allow or Deny; not run"

    def params(message: Optional[str]) -> Dict[str, Any]:
        return SessionPermissionParams(session_id=sid, request_id=request_id, decision=decision, message=message,
                                       arguments=arguments).to_wire()

    if arguments is not None and (size := _wire_size(params(None))) > budget:
        # The arguments alone fit (not_json), the whole answer does not.
        decision, arguments = "deny", None
        message = (f"the approval callback allowed with arguments that cannot be sent (too large to send: the answer "
                   f"is {size} bytes as JSON, more than the {budget} the bridge's line limit leaves it); not run")
    if message is None:
        return "session/permission", params(None)
    # What cannot travel as UTF-8 becomes U+FFFD; a message too long for the line (a deny's, an
    # exception's) is cut as a tool result is.
    message = SURROGATE.sub("\ufffd", message)
    if len(message) * 6 > budget // 2:
        message = cut_to_fit(message, budget - _wire_size(params("")) + 2, "message")
    return "session/permission", params(message)


def not_json(value: Any, budget: int = MAX_ANSWER_BYTES) -> Optional[str]:
    """Why `value` cannot be sent as JSON (NaN, a set, a lone surrogate, past ``budget`` bytes), or None."""
    try:
        data = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        return f"{type(err).__name__}: {err}"
    if len(data) > budget:
        return f"too large to send: {len(data)} bytes as JSON, more than the {budget} the bridge's line limit leaves an answer"
    return None

"""The answers to ``tool/request`` and ``permission/request``, as the dispatcher
(tool_dispatch.py) sends them: every job ends in exactly one answer the bridge takes, whatever
the user's function gave — its result or an error result, an allow or a deny — made from types
and texts that always travel (UTF-8, JSON without NaN, under the bridge's line limit)."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, Literal, Optional, Tuple

from pydantic import ValidationError

from ..client_tools import Allow, ClientTool, Deny, tool_output_text, validation_error_text
from ..events import event_from_notification
from ..notification import Notification
from ..wire import PermissionRequestEvent, SessionPermissionParams, SessionToolResultParams, TextBlock

__all__ = ["Answer", "Unanswerable", "answered", "ask", "call_tool", "permission_answer", "tool_answer", "tool_result",
           "not_json", "MAX_ANSWER_BYTES"]

Answer = Tuple[str, Dict[str, Any]]  # method and params of the request that answers

#: The largest answer sent (its params as JSON): the bridge drops a line past 16 MiB, and with
#: it the answer, so a longer tool result is cut to fit, with a note saying so.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")


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
        return finish(None, Unanswerable(f"{type(err).__name__} while making the answer"))


class Unanswerable(Exception):
    """The answer could not be made from what the function gave; its text names only types."""


def tool_answer(sid: str, call_id: str, name: Any, value: Any, exc: Optional[BaseException]) -> Answer:
    if exc is None:
        try:
            return "session/tool_result", tool_result(sid, call_id, tool_output_text(value), False)
        except Exception as err:  # noqa: BLE001 - a value pydantic cannot encode
            exc = TypeError(f"{name} returned a {type(value).__name__}, which cannot be sent as JSON: {err}")
    if isinstance(exc, Unanswerable):
        text = f"the client tool {name} gave nothing that can be sent back: {exc.args[0]}"
    elif isinstance(exc, (_BadArguments, _NoSuchTool)):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return "session/tool_result", tool_result(sid, call_id, text, True)


def tool_result(sid: str, call_id: str, text: str, is_error: bool) -> Dict[str, Any]:
    # What cannot travel as UTF-8 (a lone surrogate: a file name's undecodable byte) becomes U+FFFD.
    text = _SURROGATE.sub("\ufffd", text)
    # A character is at most 6 bytes as JSON (`\u001f`): most results need no measuring.
    size = _wire_size(text) if len(text) * 6 > MAX_ANSWER_BYTES else 0
    if size > MAX_ANSWER_BYTES:
        keep = int(len(text) * (MAX_ANSWER_BYTES / size) * 0.9)
        text = f"{text[:keep]}\n[cut by the SDK: this result was {len(text)} characters, {size} bytes as JSON; " \
               f"the first {keep} are above]"
    return SessionToolResultParams(session_id=sid, call_id=call_id, content=[TextBlock(text=text)],
                                   is_error=True if is_error else None).to_wire()


def _wire_size(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def ask(callback: Callable[[PermissionRequestEvent], Any], n: Notification) -> Any:
    event = event_from_notification(n)
    if not isinstance(event, PermissionRequestEvent):
        raise ValueError(f"a permission/request the SDK cannot read: {n.payload!r}")
    return callback(event)


def permission_answer(sid: str, request_id: str, value: Any, exc: Optional[BaseException]) -> Answer:
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
        elif (why := not_json(value.arguments)) is not None:
            message = f"the approval callback allowed with arguments that are not JSON ({why}); not run"
        else:
            decision, arguments = "allow", value.arguments
    elif isinstance(value, Deny):
        if not isinstance(value.message, str):
            message = f"the approval callback denied with a {type(value.message).__name__} for a message; not run"
        elif value.message:
            message = _SURROGATE.sub("\ufffd", value.message)
        # else None: the bridge says "the client denied this <tool> call".
    else:
        message = f"the approval callback returned {type(value).__name__}, not Allow or Deny; not run"
    params = SessionPermissionParams(session_id=sid, request_id=request_id, decision=decision, message=message,
                                     arguments=arguments)
    return "session/permission", params.to_wire()


def not_json(value: Any) -> Optional[str]:
    """Why `value` cannot be sent as JSON (NaN, a set, a lone surrogate, past the size cap), or None."""
    try:
        data = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        return f"{type(err).__name__}: {err}"
    if len(data) > MAX_ANSWER_BYTES:
        return f"{len(data)} bytes, more than {MAX_ANSWER_BYTES}"
    return None

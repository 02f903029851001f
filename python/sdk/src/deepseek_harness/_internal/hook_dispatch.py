"""Answering the bridge's ``hook/request`` events with the user's :class:`~deepseek_harness.Hooks`
functions: what the dispatcher (tool_dispatch.py) runs for one, and the ``session/hook`` answer
it sends.

Invariant: every job ends in exactly one answer the bridge takes, whatever the function did. An
answer the bridge would refuse (an empty ``block``, a field the hook does not take) is never
sent: the hook would then wait until its deadline. A function that raises or returns something
else (an answer whose field has another type included) fails closed where the hook guards something: a prompt-submit failure blocks the prompt, a
post-tool failure withholds the tool's output; a stop failure lets the turn end.
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any, Callable, Dict, Optional, Tuple

from ..events import event_from_notification
from ..hooks import HOOK_NAMES, Hooks, PostToolAnswer, PromptSubmitAnswer, StopAnswer
from ..notification import Notification
from ..wire import HookRequestEvent, SessionHookParams, TextBlock
from .outgoing import SURROGATE
from .tool_answers import MAX_ANSWER_BYTES, Answer, Unanswerable, not_json

__all__ = ["hook_job"]

log = logging.getLogger("deepseek_harness")

_ANSWERS = {"prompt-submit": PromptSubmitAnswer, "post-tool": PostToolAnswer, "stop": StopAnswer}
#: The type of each answer's fields (None aside). A field of another type is a wrong answer, not
#: one to coerce: ``bool("false")`` is True, and ``str()`` of a list is its repr.
_FIELD_TYPES: Dict[type, Dict[str, type]] = {
    PromptSubmitAnswer: {"block": str, "context": str},
    PostToolAnswer: {"content": str, "is_error": bool, "context": str},
    StopAnswer: {"continue_with": str},
}

Job = Tuple[Callable[[], Any], Callable[[Any, Optional[BaseException]], Answer], bool]


def hook_job(hooks: Hooks, sid: str, n: Notification, data: Dict[str, Any], budget: int = MAX_ANSWER_BYTES) -> Optional[Job]:
    """What runs for one ``hook/request`` (the function, the answer's maker, whether it is
    async); None for a request the SDK cannot answer (malformed: logged). ``budget``: the most
    bytes the answer's params may take (:func:`~.tool_answers.answer_budget`)."""
    hook_id, hook = data.get("hookId"), data.get("hook")
    if not isinstance(hook_id, str) or not isinstance(hook, str) or hook not in HOOK_NAMES.values():
        log.warning("ignoring a hook/request without a hookId or with an unknown hook: %r", data)
        return None
    fn = hooks.function_for(hook)
    finish = functools.partial(hook_answer, sid, hook_id, hook, budget=budget)
    if fn is None:
        # Asked for a hook this harness has no function for (not one it sent): change nothing.
        return (lambda: None), finish, False
    return functools.partial(_call, fn, n), finish, _is_async(fn)


def _call(fn: Callable[[HookRequestEvent], Any], n: Notification) -> Any:
    event = event_from_notification(n)
    if not isinstance(event, HookRequestEvent):
        raise ValueError(f"a hook/request the SDK cannot read: {n.payload!r}")
    return fn(event)


def _text(value: str) -> str:
    return SURROGATE.sub("\ufffd", value)


def hook_answer(sid: str, hook_id: str, hook: str, value: Any, exc: Optional[BaseException], *,
                budget: int = MAX_ANSWER_BYTES) -> Answer:
    """The ``session/hook`` answer for what the function gave (``value``) or raised (``exc``)."""
    expected = _ANSWERS[hook]
    if exc is None and value is not None and not isinstance(value, expected):
        exc = TypeError(f"the {hook} hook returned {type(value).__name__}, not {expected.__name__} or None")
    if exc is None and value is not None:
        exc = _wrong_field(value, expected)
    fields: Dict[str, Any] = {}
    if exc is not None:
        why = exc.args[0] if isinstance(exc, Unanswerable) and exc.args else f"{type(exc).__name__}: {exc}"
        log.warning("the %s hook failed (%s); %s", hook, why,
                    {"prompt-submit": "blocking the prompt", "post-tool": "withholding the tool's output", "stop": "the turn ends"}[hook])
        if hook == "prompt-submit":
            fields["block"] = _text(f"the prompt-submit hook failed ({why}); the prompt was not sent")
        elif hook == "post-tool":
            fields["content"] = [TextBlock(text=_text(f"the post-tool hook failed ({why}); the tool's output is withheld"))]
            fields["is_error"] = True
    elif isinstance(value, PromptSubmitAnswer):
        if value.block is not None:
            fields["block"] = _text(str(value.block)) or "blocked by the prompt-submit hook"
        if value.context:
            fields["context"] = _text(str(value.context))
    elif isinstance(value, PostToolAnswer):
        if value.content is not None:
            fields["content"] = [TextBlock(text=_text(str(value.content)))]
        if value.is_error is not None:
            fields["is_error"] = bool(value.is_error)
        if value.context:
            fields["context"] = _text(str(value.context))
    elif isinstance(value, StopAnswer) and value.continue_with:
        fields["continue_"] = _text(str(value.continue_with))
    params = SessionHookParams(session_id=sid, hook_id=hook_id, **fields).to_wire()
    too_big = not_json(params, budget)
    if too_big is not None:
        raise Unanswerable(f"the {hook} hook's answer cannot be sent: {too_big}")
    return "session/hook", params


def _wrong_field(value: Any, answer_type: type) -> Optional[TypeError]:
    """Why an answer's field has another type than the answer declares (it then fails closed, as
    a wrong answer does), or None."""
    for field, kind in _FIELD_TYPES[answer_type].items():
        got = getattr(value, field)
        if got is not None and not isinstance(got, kind):
            return TypeError(f"{type(value).__name__}.{field} is a {type(got).__name__}, not a {kind.__name__} or None")
    return None


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))

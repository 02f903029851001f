"""Hooks: Python functions the bridge asks at three points of a turn (docs/PROTOCOL.md "Hooks").

``DeepSeekHarness(..., hooks=Hooks(prompt_submit=fn, post_tool=fn, stop=fn))`` asks the bridge
for the hook points given (``initialize.hooks``); at each, the turn waits while the SDK calls
the function with the :class:`~deepseek_harness.HookRequestEvent` and sends its answer
(``session/hook``). Functions may be sync or ``async`` and run where client tools run (a worker
pool; an ``async`` one on the caller's loop with :class:`~deepseek_harness.AsyncDeepSeekHarness`).

What each returns (``None``: change nothing):

* ``prompt_submit`` → :class:`PromptSubmitAnswer`: ``block`` ends the turn before any model
  request (``reason.kind == "blocked"``, status ``error``), ``context`` is appended to the
  prompt the model reads.
* ``post_tool`` → :class:`PostToolAnswer`: ``content`` replaces the tool's output, ``is_error``
  its error flag, ``context`` is appended to it (a formatter's diagnostics).
* ``stop`` → :class:`StopAnswer`: ``continue_with`` goes back to the model as a user message and
  the turn goes on (up to ``max_steps`` model requests, then ``max-steps``).

A function that raises or returns anything else (an answer with a field of another type too:
``is_error="false"`` is not coerced) fails closed where that matters: a
``prompt_submit`` failure blocks the prompt and a ``post_tool`` failure withholds the tool's
output (the model reads that the hook failed); a ``stop`` failure lets the turn end. Each is
logged on the ``deepseek_harness`` logger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from .wire import SessionHookParams

# SessionHookParams is defined in deepseek_harness.wire; it stays importable from here, the same object.
__all__ = ["Hooks", "PromptSubmitAnswer", "PostToolAnswer", "StopAnswer", "SessionHookParams", "HOOK_NAMES"]

#: The wire's hook names, by the Python field that holds each hook's function.
HOOK_NAMES: Dict[str, str] = {"prompt_submit": "prompt-submit", "post_tool": "post-tool", "stop": "stop"}


@dataclass(frozen=True)
class Hooks:
    """The hook functions of a harness; each is called with a
    :class:`~deepseek_harness.HookRequestEvent` and returns its point's answer or ``None``."""

    prompt_submit: Optional[Callable[..., Any]] = None
    post_tool: Optional[Callable[..., Any]] = None
    stop: Optional[Callable[..., Any]] = None

    def __post_init__(self) -> None:
        for field in HOOK_NAMES:
            fn = getattr(self, field)
            if fn is not None and not callable(fn):
                raise TypeError(f"Hooks({field}=...) takes a function, not {type(fn).__name__}")

    def wire_names(self) -> List[str]:
        """``initialize.hooks``: the hook points that have a function."""
        return [wire for field, wire in HOOK_NAMES.items() if getattr(self, field) is not None]

    def function_for(self, wire_name: str) -> Optional[Callable[..., Any]]:
        """The function of the hook point ``wire_name`` (``"post-tool"``), or None."""
        for field, wire in HOOK_NAMES.items():
            if wire == wire_name:
                return getattr(self, field)  # type: ignore[no-any-return]
        return None


@dataclass(frozen=True)
class PromptSubmitAnswer:
    """A ``prompt_submit`` hook's answer: ``block`` (why) ends the turn before the model sees
    the prompt; ``context`` is appended to the prompt."""

    block: Optional[str] = None
    context: Optional[str] = None


@dataclass(frozen=True)
class PostToolAnswer:
    """A ``post_tool`` hook's answer: ``content`` replaces the tool's output, ``is_error`` its
    error flag; ``context`` is appended to the output as its own text block."""

    content: Optional[str] = None
    is_error: Optional[bool] = None
    context: Optional[str] = None


@dataclass(frozen=True)
class StopAnswer:
    """A ``stop`` hook's answer: ``continue_with`` goes back to the model as a user message and
    the turn goes on; without it the turn completes."""

    continue_with: Optional[str] = None

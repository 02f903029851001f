"""What a harness makes of its :class:`~deepseek_harness.HarnessOptions` before the bridge runs:
the checked tools, approvals and hooks, and the keywords of its ``initialize``; and the folder
of its session logs, as the bridge reports it. Shared by the blocking and the asyncio fronts
(the asyncio harness wraps a blocking one)."""

from __future__ import annotations

import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ..client_tools import ClientTool, split_tools
from ..hooks import Hooks
from ..options import INITIALIZE_FIELDS, HarnessOptions

__all__ = ["HarnessTools", "check_tools", "initialize_keywords", "LogFolder", "close_when_dropped", "closed_reason"]


@dataclass(frozen=True)
class HarnessTools:
    """The tools of a harness: ``builtin`` (the built-in allow-list, None: all), the client
    tools, and the hooks that have a function (None: no hook point)."""

    builtin: Optional[List[str]]
    client: List[ClientTool]
    hooks: Optional[Hooks]

    def need_dispatch(self, approvals: Optional[str]) -> bool:
        """Whether the bridge will ask this process for anything: a client tool, an approval, a hook."""
        return bool(self.client) or approvals not in (None, "never") or self.hooks is not None


def check_tools(o: HarnessOptions) -> HarnessTools:
    """Checks what the harness offers and who answers for it; raises ``ValueError`` /
    ``TypeError`` naming the option, before any process starts."""
    builtin, client_tools = split_tools(list(o.tools) if o.tools is not None else None,
                                        list(o.builtin_tools) if o.builtin_tools is not None else None)
    if o.approvals is not None and o.approvals not in ("never", "writes", "always"):
        raise ValueError(f"approvals must be 'never', 'writes' or 'always', not {o.approvals!r}")
    if o.approvals not in (None, "never") and o.can_use_tool is None:
        raise ValueError(f"approvals={o.approvals!r} needs can_use_tool=: the callback that allows or denies each call")
    if o.can_use_tool is not None and not callable(o.can_use_tool):
        raise TypeError(f"can_use_tool must be callable, not {type(o.can_use_tool).__name__}")
    if o.can_use_tool is not None and o.approvals in (None, "never"):
        # Silently never calling it would let every call through that the caller meant to review.
        raise ValueError("can_use_tool= is asked only with approvals='writes' or 'always'; say which calls it reviews")
    if o.hooks is not None and not isinstance(o.hooks, Hooks):
        raise TypeError(f"hooks= takes a Hooks(prompt_submit=..., post_tool=..., stop=...), not {type(o.hooks).__name__}")
    # Hooks with no function ask for nothing: no hook point, no dispatcher.
    hooks = o.hooks if o.hooks is not None and o.hooks.wire_names() else None
    return HarnessTools(builtin, client_tools, hooks)


#: Settings a harness holds as attributes, which may be changed before it starts.
HARNESS_ATTRIBUTES = ("max_tokens", "max_steps", "permission_mode", "instructions")


def initialize_keywords(options: HarnessOptions, tools: HarnessTools, attributes: Any) -> Dict[str, Any]:
    """The keywords of :meth:`HarnessClient.initialize` for a harness: every setting of
    :data:`~deepseek_harness.options.INITIALIZE_FIELDS` from ``options``, except the tools
    (``tools``) and :data:`HARNESS_ATTRIBUTES` (read off ``attributes``, the harness itself,
    whose ``tools`` attribute is the built-in allow-list)."""
    keywords = {name: getattr(options, name, None) for name, _, _ in INITIALIZE_FIELDS}
    keywords.update({name: getattr(attributes, name) for name in HARNESS_ATTRIBUTES})
    keywords.update(tools=attributes.tools, client_tools=tools.client or None, hooks=tools.hooks)
    return keywords


def closed_reason(front: str) -> str:
    """What a turn (or any request) started after ``close()`` is told, in the terms of the
    harness (``front``: its class name) that its user made: that user never made a "client"."""
    return f"this {front} was closed; create a new {front} to run more turns"


class LogFolder:
    """The folder of a harness's session logs, once known: the bridge names it in every
    ``session/list`` result (``logFolder``; absent: it keeps no log). One bridge process keeps
    one folder, so the first answer holds for the harness's life."""

    def __init__(self) -> None:
        self.known = False
        self.folder: Optional[str] = None

    def learn(self, folder: Optional[str]) -> None:
        self.known = True
        self.folder = folder


def close_when_dropped(harness: Any, client: Any, dispatcher: Any) -> "weakref.finalize[Any, Any]":
    """Closes ``client`` (and ``dispatcher``, if any) once ``harness`` is garbage collected
    without having been closed. The client's own finalizer is not enough: with a dispatcher
    (client tools, approvals, hooks) the reader thread holds it, as the answerer of their
    requests, and it holds the client, so that client is never collected; and the dispatcher's
    worker pool must be closed too. Without this, an unclosed harness dropped by its program
    would leave its bridge process and threads running until the interpreter exited. The close
    (shutdown, then stdin closed: turns in flight settle) runs on a daemon thread of its own,
    since a finalizer may run on any thread, the reader's included, and must not block. The
    harness's ``close`` detaches it; at interpreter exit the client's own exit hook closes it
    instead (no thread can be started then)."""
    finalizer = weakref.finalize(harness, _close_dropped, client, dispatcher)
    finalizer.atexit = False
    return finalizer


def _close_dropped(client: Any, dispatcher: Any) -> None:
    def close() -> None:
        client.close()
        if dispatcher is not None:
            dispatcher.close()

    process = client.process
    unclosed = process is not None and not client.closed  # before the close below changes it
    threading.Thread(target=close, name="harness-bridge-dropped", daemon=True).start()
    if unclosed:
        # As an unclosed file does: the client's own warning never comes (this finalizer holds
        # the client, and closes it). After the close began, since under `-W error` it raises.
        # "harness": the asyncio harness is dropped through the blocking one it wraps.
        warnings.warn(f"unclosed harness (bridge pid {process.pid}, workspace {client.options.cwd or '.'}): "
                      "shutting its bridge down; call close() or use `with` / `async with`", ResourceWarning)

"""``HarnessClient``: the low-level, thread-safe client of ``harness-bridge --stdio``.

One bridge process and its requests: :meth:`~HarnessClient.initialize`,
:meth:`~HarnessClient.session_prompt`, :meth:`~HarnessClient.session_cancel`,
:meth:`~HarnessClient.shutdown`, and subscriptions to its notifications. The machinery (the
process, the reader thread and its routing, the inboxes, the prompt state machine) is in
:mod:`deepseek_harness._internal`, shared with the blocking and the asyncio fronts.

The client only sends requests and only receives responses and notifications. A frame shaped
like a server request (``method`` and ``id``) is dropped by an explicit guard in the reader.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from ._binary import find_bridge_binary
from ._internal.connection import Connection, validate
from ._internal.decode import NotificationCallback
from ._internal.fs_names import utf8_paths
from ._internal.process import PathLike, child_env
from ._internal.prompt import PromptInput, run_prompt
from ._internal.start_timeout import initialize_wait, start_bound, start_timed_out
from ._internal.session_requests import compact_session, delete_session, fork_session, list_sessions, read_page
from ._meta import UNKNOWN_VERSION, __version__
from .errors import ProtocolError, ProviderUnavailableError, RequestTimeoutError
from .client_tools import ClientTool
from .hooks import Hooks
from .options import HarnessOptions, initialize_settings, model_name, resolve_options
from .wire import (
    PROTOCOL_VERSION, InitializeResponse, McpServerConfig, SessionCancelResponse, SessionHookParams, SessionInfo,
    SessionPermissionParams, RewindResult, SessionPromptResponse, SessionReadResponse, SessionToolResultParams,
    TextBlock,
)
from . import turn_control as _turn_control
from .subscriptions import NotificationFilter, NotificationSubscription, make_predicate

__all__ = ["HarnessClient", "NotificationSubscription", "NotificationCallback", "NotificationFilter"]


# HarnessClient's own names of three fields (see its docstring).
_CLIENT_ALIASES = {"max_steps": "default_max_steps", "permission_mode": "max_permission_mode", "cwd": "bridge_cwd"}


class HarnessClient(Connection):
    """Runs ``harness-bridge --stdio`` and talks JSON-RPC 2.0 to it. Thread-safe.

    Configured by ``options`` (a :class:`HarnessOptions`; the client uses the bridge process's
    and the client's fields, see there) and keyword arguments, which override the fields of
    ``options``. ``bridge_bin``, when given, overrides ``options.bridge_bin``. The keyword
    arguments are the fields' names, and these, kept from before ``HarnessOptions``, which
    mean the command line's settings here:

    * ``max_steps``: ``default_max_steps`` (``--max-steps N``: model requests per turn when
      ``initialize`` gives none; not a limit on what it gives);
    * ``permission_mode``: ``max_permission_mode`` (``--permission-mode MODE``: the widest mode
      ``initialize`` may ask for; a wider one is narrowed to it);
    * ``cwd``: ``bridge_cwd`` (the working directory of the bridge process).

    The attributes ``bridge_bin``, ``session_root``, ``log_level``, ``max_steps``,
    ``permission_mode``, ``extra_args``, ``env``, ``cwd``, ``request_timeout_seconds``,
    ``start_timeout_seconds`` and ``shutdown_timeout_seconds`` hold the resolved values (with those meanings), and may be
    changed before :meth:`start`.
    """

    def __init__(
        self,
        bridge_bin: Optional[PathLike] = None,
        *,
        options: Optional[HarnessOptions] = None,
        **overrides: Any,
    ) -> None:
        super().__init__()
        o = resolve_options("HarnessClient", options, overrides, _CLIENT_ALIASES)
        #: The options this client was made with (the attributes below may be changed later).
        self.options = o
        self.bridge_bin = bridge_bin if bridge_bin is not None else o.bridge_bin
        self.session_root = o.session_root
        self.log_level = o.log_level
        self.max_steps = o.default_max_steps
        self.permission_mode = o.max_permission_mode
        self.extra_args = list(o.extra_args)
        self.env = dict(o.env) if o.env else {}
        self.cwd = o.bridge_cwd
        self.request_timeout_seconds = o.request_timeout_seconds
        self.start_timeout_seconds = o.start_timeout_seconds
        self.shutdown_timeout_seconds = o.shutdown_timeout_seconds

    def command(self) -> List[str]:
        """The command line the bridge is (or will be) started with."""
        path = self.bridge_path or find_bridge_binary(self.bridge_bin, child_env(self.env), self.cwd)
        args = [str(path), "--stdio"]
        if self.session_root is not None:
            args += ["--session-root", os.fspath(self.session_root)]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        if self.max_steps is not None:
            args += ["--max-steps", str(self.max_steps)]
        if self.permission_mode is not None:
            args += ["--permission-mode", self.permission_mode]
        return args + self.extra_args

    def start(self) -> "HarnessClient":
        """Finds the binary and spawns the bridge. Idempotent."""
        return super().start()

    def __enter__(self) -> "HarnessClient":
        return self.start()

    def _launch_spec(self) -> Tuple[List[str], Dict[str, str], Optional[PathLike]]:
        env = child_env(self.env)
        self.bridge_path = find_bridge_binary(self.bridge_bin, env, self.cwd)
        return self.command(), env, self.cwd

    # ------------------------------------------------------------------ requests

    def initialize(
        self,
        cwd: Union[str, "os.PathLike[str]"],
        provider: str,
        model: Union[str, "os.PathLike[str]"],
        max_tokens: Optional[int] = None,
        max_steps: Optional[int] = None,
        permission_mode: Optional[str] = None,
        tools: Optional[Sequence[str]] = None,
        instructions: Optional[str] = None,
        *,
        thinking: Optional[str] = None,
        reasoning_effort: Optional[str] = None,
        user: Optional[str] = None,
        tool_choice: Optional[Union[str, Mapping[str, str]]] = None,
        first_token_timeout_seconds: Optional[float] = None,
        model_request_timeout_seconds: Optional[float] = None,
        mcp_servers: Optional[Mapping[str, McpServerConfig]] = None,
        context_window: Optional[int] = None,
        compact_at: Optional[float] = None,
        prices: Optional[Any] = None,
        client_tools: Optional[Sequence[Union[ClientTool, Mapping[str, Any]]]] = None,
        approvals: Optional[str] = None,
        client_tool_timeout_seconds: Optional[float] = None,
        hooks: Optional[Union[Hooks, Sequence[str]]] = None,
        timeout: Optional[float] = None,
    ) -> InitializeResponse:
        """Sends ``initialize``; checks the protocol version (raises :class:`ProtocolError`
        on a mismatch) and warns when the bridge's version differs from the SDK's. The model
        settings (``thinking`` … ``model_request_timeout_seconds``) and ``mcp_servers`` mean what
        the fields of :class:`HarnessOptions` of the same names mean; ``tools`` is the built-in
        allow-list only. ``client_tools`` (:class:`ClientTool` objects, or the wire's
        ``{name, description, parameters, readOnly?}`` dicts) and ``approvals`` are offered, but
        this client runs nothing itself: answer each ``tool/request`` with
        :meth:`session_tool_result` and each ``permission/request`` with
        :meth:`session_permission` (``DeepSeekHarness`` does that for you); likewise ``hooks``
        (hook point names, or a :class:`Hooks` for its points): answer each ``hook/request``
        with :meth:`session_hook`.

        Unanswered within ``timeout`` (else the shorter of ``request_timeout_seconds`` and
        ``start_timeout_seconds``, to which the MCP servers' start is added), the bridge has not
        started: it is killed, this client closed, and :class:`BridgeStartTimeoutError` raised."""
        params: Dict[str, Any] = {
            "cwd": os.path.abspath(os.fspath(cwd)),
            "provider": provider,
            "model": model_name(model),
            "protocolVersion": PROTOCOL_VERSION,
        }
        # Every keyword named in INITIALIZE_FIELDS goes through that one table.
        params.update(initialize_settings(locals()))
        # File names Python escaped (the C locale without UTF-8 mode) as the UTF-8 names they are.
        params = utf8_paths(params)
        wait, source = initialize_wait(timeout, self.request_timeout_seconds,
                                       start_bound(self.start_timeout_seconds, params.get("mcpServers")))
        try:
            result = self._request("initialize", params, timeout=wait)
        except ProviderUnavailableError as exc:
            raise exc.for_python() from None  # "no key": say env=, not --secrets-fd
        except RequestTimeoutError as exc:
            # A bridge that never answered initialize never started (Node.js hangs so under a
            # low `ulimit -u`): killed, not left to hang the next call or close().
            assert self._process is not None
            error = start_timed_out(self._process, exc.timeout_seconds, source)
            self.close()
            raise error from None
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"harness-bridge speaks protocol version {version!r}, this SDK speaks "
                f"{PROTOCOL_VERSION}: install matching versions of deepseek-harness and "
                f"harness-bridge (the SDK is {__version__}; bridge at {self.bridge_path})"
            )
        response = validate(InitializeResponse, result, "initialize")
        server_version = response.server_info.version
        if __version__ != UNKNOWN_VERSION and server_version != __version__:
            warnings.warn(
                f"harness-bridge {server_version} (at {self.bridge_path}) differs from "
                f"deepseek-harness {__version__}",
                RuntimeWarning,
                stacklevel=2,
            )
        self.initialize_response = response
        return response

    def session_prompt(
        self,
        session_id: str,
        content_blocks: PromptInput,
        on_notification: Optional[NotificationCallback] = None,
        *,
        timeout: Optional[float] = None,
        max_cost_usd: Optional[float] = None,
    ) -> SessionPromptResponse:
        """Runs one turn and returns its settled ``{status, reason}``.

        ``content_blocks`` is a list of text blocks (dicts or :class:`TextBlock`), or a string
        for a single text block. ``on_notification`` is called, on this thread, with every
        notification of the session and its subagents, in stream order, and all of those
        written before the response have been delivered when this returns. If it raises, the
        turn is cancelled on the bridge and the exception is re-raised here once the turn has
        settled. On timeout (``timeout``, else ``request_timeout_seconds``) the turn is
        cancelled and :class:`RequestTimeoutError` is raised. ``max_cost_usd``: the turn's budget
        in US dollars (``session/prompt.maxCostUsd``; a ``budget`` end once reached).
        """
        return run_prompt(self, session_id, content_blocks, on_notification, timeout, max_cost_usd=max_cost_usd)

    def session_tool_result(self, session_id: str, call_id: str, text: str, *, is_error: bool = False,
                            timeout: Optional[float] = None) -> None:
        """``session/tool_result``: answers the client tool call ``call_id`` (a ``tool/request``)
        with one text block. Raises :class:`InvalidParamsError` (``kind == "unknown-call"``) for a
        call nobody waits for (answered, cancelled, timed out)."""
        params = SessionToolResultParams(session_id=session_id, call_id=call_id, content=[TextBlock(text=text)],
                                         is_error=True if is_error else None)
        self._request("session/tool_result", params.to_wire(), timeout=timeout)

    def session_permission(self, session_id: str, request_id: str, decision: Literal["allow", "deny"], *, message: Optional[str] = None,
                           arguments: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> None:
        """``session/permission``: answers a ``permission/request`` with ``"allow"`` (with
        ``arguments`` instead of the model's when given) or ``"deny"`` (``message`` is the error
        result the model reads)."""
        params = SessionPermissionParams(session_id=session_id, request_id=request_id, decision=decision,
                                         message=message, arguments=dict(arguments) if arguments is not None else None)
        self._request("session/permission", params.to_wire(), timeout=timeout)

    def session_steer(self, session_id: str, content_blocks: PromptInput, *, timeout: Optional[float] = None) -> bool:
        """``session/steer``: adds a user message to the session's running turn (it joins the
        history before the turn's next model request, after the results of the tools already
        running). True once recorded; False when no turn is in flight or it ended first.
        Safe to call from another thread while :meth:`session_prompt` waits."""
        return _turn_control.steer(self, session_id, content_blocks, timeout)

    def session_hook(self, session_id: str, hook_id: str, *, block: Optional[str] = None, context: Optional[str] = None,
                     content: Optional[str] = None, is_error: Optional[bool] = None, continue_with: Optional[str] = None,
                     timeout: Optional[float] = None) -> None:
        """``session/hook``: answers the ``hook/request`` ``hook_id`` (no field: change nothing).
        ``block``/``context`` for prompt-submit, ``content`` (one text block)/``is_error``/
        ``context`` for post-tool, ``continue_with`` for stop. Raises
        :class:`InvalidParamsError`: ``kind == "unknown-hook"`` for a hook nobody waits for, and
        for a field that hook does not take (the hook still waits)."""
        params = SessionHookParams.model_validate({
            "sessionId": session_id, "hookId": hook_id, "block": block, "context": context,
            "content": [TextBlock(text=content)] if content is not None else None,
            "isError": is_error, "continue": continue_with})
        self._request("session/hook", params.to_wire(), timeout=timeout)

    def session_cancel(self, session_id: str, *, timeout: Optional[float] = None) -> bool:
        """Cancels the session's turn in flight; True when there was one (it has settled
        ``aborted`` when this returns), False otherwise."""
        result = self._request("session/cancel", {"sessionId": session_id}, timeout=timeout)
        return validate(SessionCancelResponse, result, "session/cancel").cancelled

    # The sessions API (docs/PROTOCOL.md, "Sessions API"); the high-level fronts page and type on top.

    def session_list(self, *, timeout: Optional[float] = None) -> List[SessionInfo]:
        """``session/list``: this workspace's sessions, newest first."""
        return list(list_sessions(self, timeout).sessions)

    def session_read(self, session_id: str, after_seq: Optional[int] = None, limit: Optional[int] = None, *,
                     timeout: Optional[float] = None) -> SessionReadResponse:
        """``session/read``: one page of the session's logged events after ``after_seq``."""
        return read_page(self, session_id, after_seq, limit, timeout)

    def session_fork(self, session_id: str, new_session_id: str, turn: Optional[int] = None, *,
                     timeout: Optional[float] = None) -> str:
        """``session/fork``: copies the history up to ``turn`` (default: all) into ``new_session_id``."""
        return fork_session(self, session_id, new_session_id, turn, timeout)

    def session_delete(self, session_id: str, *, timeout: Optional[float] = None) -> bool:
        """``session/delete``: False when there was no such session."""
        return delete_session(self, session_id, timeout)

    def session_compact(self, session_id: str, *, timeout: Optional[float] = None) -> bool:
        """``session/compact``: summarizes the session's older history now; True when a
        ``context/compacted`` was recorded. Raises SessionBusyError while a turn runs."""
        return compact_session(self, session_id, timeout)

    def session_rewind(self, session_id: str, turn: int, *, files: bool = True, conversation: bool = True,
                       force: bool = False, timeout: Optional[float] = None) -> RewindResult:
        """``session/rewind``: undoes turns ``turn`` and later (files and/or history); a file
        changed by someone else since is a conflict unless ``force``. Raises SessionBusyError
        while a turn runs, InvalidParamsError for an unknown turn or session."""
        from .checkpoints import rewind_session

        return rewind_session(self, session_id, turn, files, conversation, force, timeout)

    def shutdown(self, *, timeout: Optional[float] = None) -> None:
        """Sends ``shutdown`` only (the process then exits); :meth:`close` does this and more."""
        self._request("shutdown", None, timeout=timeout)

    # ------------------------------------------------------------------ subscriptions

    def subscribe_notifications(self, filter: NotificationFilter = None) -> NotificationSubscription:
        """Every notification from now on, or those matching ``filter``: a method name, a
        collection of method names, or a predicate (it runs on the reader thread, so keep it
        quick; an exception counts as no match)."""
        return NotificationSubscription(self._router, make_predicate(filter))

    def subscribe_session_notifications(self, session_id: str) -> NotificationSubscription:
        """The notifications of one session and, as ``subagent.started`` reveals them, of its
        child sessions (recursively)."""
        return NotificationSubscription(self._router, None, session_id)

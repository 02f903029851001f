"""``HarnessOptions``: every setting of a harness in one documented object.

:class:`~deepseek_harness.DeepSeekHarness`, :class:`~deepseek_harness.AsyncDeepSeekHarness` and
:class:`~deepseek_harness.HarnessClient` take ``options=HarnessOptions(...)``, keyword arguments,
or both: keyword arguments override the fields of ``options`` (which is left as it is; it is
frozen, so one object can configure any number of harnesses).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from .client_tools import ClientTool
from .hooks import Hooks
from .mcp_servers import McpServerConfig, mcp_servers_wire
from ._internal.start_timeout import check_start_timeout

__all__ = ["HarnessOptions", "INITIALIZE_FIELDS", "initialize_settings", "resolve_options", "model_name"]

PathLike = Union[str, "os.PathLike[str]"]


def model_name(model: PathLike) -> str:
    """``initialize.model`` of what the caller gave: a name, or a script file's path as a str or
    any ``os.PathLike`` (``pathlib.Path``), which JSON cannot carry as it is."""
    return os.fsdecode(model) if isinstance(model, os.PathLike) else model


@dataclass(frozen=True)
class HarnessOptions:
    """The settings of a harness. Every field has a default; ``None`` means "not set: the
    bridge's own default".

    Sent with ``initialize`` (the workspace, the model and the limits of every turn; used by
    ``DeepSeekHarness``, ignored by ``HarnessClient``, whose :meth:`~HarnessClient.initialize`
    takes them as arguments):

    Attributes:
        provider: ``"deepseek"`` (needs ``DEEPSEEK_API_KEY``), ``"openai"`` (any
            OpenAI-compatible server) or ``"scripted"`` (offline). Default ``"deepseek"``.
        model: the model name; for ``scripted``, ``"demo"`` or the path of a script file (a
            str or any ``os.PathLike``, e.g. a ``pathlib.Path``: kept as its str).
            Default ``"deepseek-flash"``, the name DeepSeek's docs give for its current model
            (older names such as ``deepseek-v4-flash`` still answer, served by it).
        cwd: the workspace of every session; default: the current directory at start.
        max_tokens: the most tokens of one model request; default: the provider's.
        max_steps: model requests per turn; the turn after that many ends
            ``error``/``max-steps``. Default: ``default_max_steps``, else 50.
        permission_mode: what the tools may do in every session: ``"read-only"`` (no writes,
            no bash), ``"workspace-write"`` (the default; bash sandboxed) or ``"full"``. A mode
            wider than ``max_permission_mode`` is narrowed to it (the bridge warns on stderr).
        tools: the tools offered: built-in tool names (``"read_file"``, ``"bash"``, ...) and
            client tools (Python functions decorated with :func:`~deepseek_harness.tool`). The
            names are the allow-list of built-ins, except when the list is non-empty and holds
            only client tools: then every built-in is offered beside them (``tools=[lookup]``
            adds ``lookup``; ``tools=["read_file", lookup]`` offers those two; ``tools=[]``
            offers no tool). Default (None): every built-in, no client tool.
        builtin_tools: the allow-list of built-in tool names, said explicitly
            (``tools=[lookup], builtin_tools=[]``: ``lookup`` alone). Giving it and names in
            ``tools`` is a ``TypeError``. Default: as ``tools`` says.
        approvals: which tool calls wait for ``can_use_tool``: ``"never"`` (the default),
            ``"writes"`` (every call of a tool that is not read-only: ``bash``, ``write_file``,
            ``edit_file``, ``task``, client tools without ``read_only=True``) or ``"always"``.
            Other than ``"never"`` it needs ``can_use_tool``, and ``can_use_tool`` needs it
            (else ``ValueError``).
        can_use_tool: the approval callback, sync or ``async``: called with a
            :class:`~deepseek_harness.PermissionRequestEvent`, it returns
            :class:`~deepseek_harness.Allow` (optionally with changed ``arguments``) or
            :class:`~deepseek_harness.Deny` (with the ``message`` the model reads). One that
            raises or returns anything else denies the call, saying so. It runs where client
            tools run (see python/sdk/README.md "Client tools").
        client_tool_timeout_seconds: how long the bridge waits for a client tool's result, an
            approval or a hook's answer (past it: an error result, a deny, or the hook skipped,
            and the turn goes on); default 600.
        hooks: :class:`~deepseek_harness.Hooks`: functions asked at a turn's hook points
            (``prompt_submit``, ``post_tool``, ``stop``; see python/sdk/README.md "Hooks").
            They run where client tools run. Default: none.
        instructions: text appended to the built-in system prompt.
        mcp_servers: MCP servers whose tools the model is offered (``mcp__<server>__<tool>``),
            by name, in the wire's shape (:class:`~deepseek_harness.McpStdioServer`,
            :class:`~deepseek_harness.McpHttpServer`); each one's outcome is in
            ``initialize_response.mcp_servers``. Default: none.

    The model's settings (also sent with ``initialize``; ``None``: the server's default):

    Attributes:
        thinking: ``"enabled"`` or ``"disabled"``: DeepSeek's thinking mode (on by default
            there). Other servers receive it in DeepSeek's shape (``thinking: {type}``).
        reasoning_effort: how hard the model reasons: ``"low"``, ``"high"`` or ``"max"`` on
            DeepSeek (its default is ``high``; not with thinking disabled); any word is passed
            on to other servers as ``reasoning_effort``.
        user: your end user's id (at most 512 bytes): DeepSeek's ``user_id``, which isolates
            cache, scheduling and content-safety handling per user; OpenAI's ``user``. Keep
            personal data out of it.
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool's name (or
            ``{"name": ...}``): ``auto`` and ``none`` go with every model request; ``required``
            and a name force a call on the first request of each turn only, so a turn can end.
            Some local servers (llama-cpp-python) stream tool calls only for a named tool.
        first_token_timeout_seconds: the longest a model request may wait for its first output
            (keep-alive comments do not count); default 600 (DeepSeek's own queue limit); 0: none.
        model_request_timeout_seconds: the longest one model request may take, retries
            included; default 3600; 0: none. With ``max_steps`` these bound every turn.
        context_window: the model's context window in tokens (default: the bridge's table;
            1M for DeepSeek's models).
        compact_at: compact a session before a request would pass this fraction of the
            window (default 0.8); see docs/long-sessions.md.
        prices: the model's prices (a :class:`~deepseek_harness.Prices`, or a dict with the
            wire's names): they replace the bridge's built-in table of DeepSeek's models, and
            give ``TurnResult.cost_usd`` and ``max_cost_usd=`` a meaning for any model
            (docs/turn-control.md).

    The bridge process (its command line and environment):

    Attributes:
        bridge_bin: the executable; default: found by :func:`find_bridge_binary`
            (``HARNESS_BRIDGE_BIN``, the bundled binary, ``PATH``; a development checkout only
            with ``HARNESS_BRIDGE_DEV_CHECKOUT=1``).
        session_root: where durable session logs go (``--session-root``); default: the
            bridge's (``HARNESS_SESSION_ROOT``, else ``$XDG_STATE_HOME/harness-bridge``, else
            ``~/.local/state/harness-bridge``).
        env: variables added to the caller's environment for the bridge (e.g.
            ``{"DEEPSEEK_API_KEY": ...}``); ``NODE_OPTIONS`` is never inherited, only passed
            when given here.
        log_level: the bridge's stderr log level (``--log-level``: debug, info, warn, error,
            silent); default ``warn``. Its lines go to the ``deepseek_harness.bridge`` logger.
        default_max_steps: ``--max-steps``: model requests per turn when ``initialize`` gives
            no ``max_steps`` (not a limit on it); default 50.
        max_permission_mode: ``--permission-mode``: the widest permission mode ``initialize``
            may ask for (a ceiling: a wider one is narrowed to it); without a
            ``permission_mode`` the mode is ``workspace-write``, or this when it is narrower.
            Default ``"full"``.
        extra_args: more command-line arguments, appended last.
        bridge_cwd: the working directory of the bridge process; default: the caller's.

    The client:

    Attributes:
        request_timeout_seconds: timeout of every request, a whole turn included (a timed-out
            turn is cancelled); None (default): no timeout of the SDK's own — a turn is still
            bounded by the bridge (``max_steps`` model requests, each within
            ``model_request_timeout_seconds``, and the tools' own limits).
        start_timeout_seconds: how long the bridge may take to answer ``initialize`` (to start),
            its MCP servers' start aside: the longest ``startupTimeoutMs`` of ``mcp_servers``
            (30 s when a server gives none) plus 5 s is added to it. Past it the bridge is killed
            and :class:`~deepseek_harness.BridgeStartTimeoutError` raised, so that no start hangs
            (Node.js does under a low ``ulimit -u``). Default 60: a bridge answers in well under a
            second, at most 20 s when its sandbox probes run to their own timeouts. A shorter
            ``request_timeout_seconds`` bounds ``initialize`` too; None: no start-up bound.
        shutdown_timeout_seconds: how long each step of closing waits (the ``shutdown``
            request, then the exit after stdin closes, then the exit after SIGTERM); default 5.
    """

    provider: str = "deepseek"
    model: PathLike = "deepseek-flash"
    cwd: Optional[PathLike] = None
    max_tokens: Optional[int] = None
    max_steps: Optional[int] = None
    permission_mode: Optional[str] = None
    tools: Optional[Sequence[Union[str, ClientTool]]] = None
    instructions: Optional[str] = None
    mcp_servers: Optional[Mapping[str, McpServerConfig]] = None
    builtin_tools: Optional[Sequence[str]] = None
    approvals: Optional[str] = None
    can_use_tool: Optional[Callable[..., Any]] = None
    client_tool_timeout_seconds: Optional[float] = None
    hooks: Optional[Hooks] = None

    thinking: Optional[str] = None
    reasoning_effort: Optional[str] = None
    user: Optional[str] = None
    tool_choice: Optional[Union[str, Mapping[str, str]]] = None
    first_token_timeout_seconds: Optional[float] = None
    model_request_timeout_seconds: Optional[float] = None
    context_window: Optional[int] = None
    compact_at: Optional[float] = None
    prices: Optional[Any] = None

    bridge_bin: Optional[PathLike] = None
    session_root: Optional[PathLike] = None
    env: Optional[Mapping[str, str]] = None
    log_level: Optional[str] = None
    default_max_steps: Optional[int] = None
    max_permission_mode: Optional[str] = None
    extra_args: Sequence[str] = ()
    bridge_cwd: Optional[PathLike] = None

    request_timeout_seconds: Optional[float] = None
    # Why 60 s: _internal/start_timeout.py lists what initialize may legitimately wait for.
    start_timeout_seconds: Optional[float] = 60.0
    shutdown_timeout_seconds: float = 5.0

    def __post_init__(self) -> None:
        # Copies, so that a caller's list or dict changed later does not change these options.
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        # A script file's path as a str: what initialize sends, and a key a pool compares (batch/pool.py).
        object.__setattr__(self, "model", model_name(self.model))
        for name in ("tools", "builtin_tools"):
            value = getattr(self, name)
            if isinstance(value, (str, ClientTool)):
                raise TypeError(f"{name}= takes a list, not one {type(value).__name__}: {name}=[{value!r}]")
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        # Refused here, before a bridge is started only to be killed (start_timeout.py).
        check_start_timeout(self.start_timeout_seconds)
        if self.env is not None:
            object.__setattr__(self, "env", dict(self.env))
        if self.mcp_servers is not None:
            object.__setattr__(self, "mcp_servers", mcp_servers_wire(self.mcp_servers))
        if isinstance(self.tool_choice, Mapping):
            object.__setattr__(self, "tool_choice", dict(self.tool_choice))


_BUILTIN_CHOICES = ("auto", "none", "required")


def _tool_choice_wire(choice: Union[str, Mapping[str, str]]) -> Union[str, Dict[str, str]]:
    if isinstance(choice, str):
        return choice if choice in _BUILTIN_CHOICES else {"name": choice}
    return dict(choice)


def _prices_wire(value: Any) -> Any:
    # Imported here: turn_control builds on the connection, which builds on this module.
    from .turn_control import prices_wire

    return prices_wire(value)


def _milliseconds(seconds: float) -> int:
    return round(seconds * 1000)


# The one table of ``initialize``'s settings: the Python name (a HarnessOptions field and a
# keyword of HarnessClient.initialize), its wire name, and how the value is put on the wire.
# cwd, provider and model are not here: they are always sent. ``tools`` is the wire's built-in
# allow-list (HarnessClient.initialize's keyword; a harness works it out of HarnessOptions.tools
# and builtin_tools), ``client_tools`` is HarnessClient.initialize's keyword only (a harness
# takes them from ``tools``).
INITIALIZE_FIELDS: Tuple[Tuple[str, str, Callable[[Any], Any]], ...] = (
    ("max_tokens", "maxTokens", lambda v: v),
    ("max_steps", "maxSteps", lambda v: v),
    ("permission_mode", "permissionMode", lambda v: v),
    ("tools", "tools", list),
    ("instructions", "instructions", lambda v: v),
    ("thinking", "thinking", lambda v: v),
    ("reasoning_effort", "reasoningEffort", lambda v: v),
    ("user", "user", lambda v: v),
    ("tool_choice", "toolChoice", _tool_choice_wire),
    ("first_token_timeout_seconds", "firstTokenTimeoutMs", _milliseconds),
    ("model_request_timeout_seconds", "modelRequestTimeoutMs", _milliseconds),
    ("mcp_servers", "mcpServers", mcp_servers_wire),
    ("context_window", "contextWindow", lambda v: v),
    ("compact_at", "compactAt", lambda v: v),
    ("prices", "prices", _prices_wire),
    ("client_tools", "clientTools", lambda v: [t.to_wire() if isinstance(t, ClientTool) else dict(t) for t in v]),
    ("approvals", "approvals", lambda v: v),
    ("client_tool_timeout_seconds", "clientToolTimeoutMs", _milliseconds),
    # A harness's Hooks send the points that have a function; HarnessClient.initialize takes names too.
    ("hooks", "hooks", lambda v: v.wire_names() if isinstance(v, Hooks) else list(v)),
)


def initialize_settings(values: Mapping[str, Any]) -> Dict[str, Any]:
    """``initialize`` params of the settings in ``values`` (Python names of
    :data:`INITIALIZE_FIELDS`) that are not ``None``; the bridge checks the values and answers
    -32602 (:class:`~deepseek_harness.JsonRpcError`) to bad ones."""
    params: Dict[str, Any] = {}
    for name, wire, to_wire in INITIALIZE_FIELDS:
        value = values.get(name)
        if value is not None:
            params[wire] = to_wire(value)
    return params


_FIELDS = frozenset(f.name for f in dataclasses.fields(HarnessOptions))


def resolve_options(owner: str, options: Optional[HarnessOptions], overrides: Dict[str, Any],
                    aliases: Optional[Mapping[str, str]] = None) -> HarnessOptions:
    """``options`` (default: all defaults) with ``overrides`` applied: a keyword argument wins
    over the field of ``options``. ``aliases`` maps an owner's own keyword names to fields. An
    unknown name raises ``TypeError``, as a misspelt keyword argument would."""
    if options is None:
        options = HarnessOptions()
    elif not isinstance(options, HarnessOptions):
        raise TypeError(f"{owner}() takes a HarnessOptions as options (or keyword arguments), "
                        f"not {type(options).__name__}: pass provider=..., model=... by name")
    changes: Dict[str, Any] = {}
    for name, value in overrides.items():
        field = aliases.get(name, name) if aliases else name
        if field not in _FIELDS:
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")
        changes[field] = value
    return dataclasses.replace(options, **changes) if changes else options

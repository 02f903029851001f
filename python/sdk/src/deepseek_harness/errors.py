"""The SDK's exceptions. Every one derives from :class:`HarnessError`."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

__all__ = [
    "ErrorCode",
    "HarnessError",
    "JsonRpcError",
    "SessionBusyError",
    "NotInitializedError",
    "ShuttingDownError",
    "ProviderUnavailableError",
    "InvalidParamsError",
    "TransportClosedError",
    "OpenFileLimitError",
    "ProcessLimitError",
    "RequestTimeoutError",
    "BridgeStartTimeoutError",
    "UnsendableRequestError",
    "RequestTooLargeError",
    "NotUtf8Error",
    "BridgeNotFoundError",
    "ProtocolError",
]


class ErrorCode:
    """JSON-RPC error codes of the protocol (PROTOCOL.md, "Errors")."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SESSION_BUSY = -32001
    NOT_INITIALIZED = -32002
    SHUTTING_DOWN = -32003
    PROVIDER_UNAVAILABLE = -32004


class HarnessError(Exception):
    """Base class of every error the SDK raises."""


class JsonRpcError(HarnessError):
    """The bridge answered a request with a JSON-RPC error.

    ``JsonRpcError.from_wire`` returns the subclass for the protocol's own codes
    (:class:`SessionBusyError`, :class:`NotInitializedError`, :class:`ShuttingDownError`,
    :class:`ProviderUnavailableError`, :class:`InvalidParamsError`), so callers may either
    ``except SessionBusyError`` or test ``err.is_busy``.
    """

    def __init__(self, code: int, message: str, data: Any = None, method: Optional[str] = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f" ({method})" if method else ""
        super().__init__(f"JSON-RPC error {code}{where}: {message}")

    @property
    def kind(self) -> Optional[str]:
        """``error.data.kind`` when the bridge sent one."""
        if isinstance(self.data, dict):
            kind = self.data.get("kind")
            return kind if isinstance(kind, str) else None
        return None

    @property
    def is_busy(self) -> bool:
        """-32001: the session already has a prompt in flight."""
        return self.code == ErrorCode.SESSION_BUSY

    @property
    def is_not_initialized(self) -> bool:
        """-32002: ``session/*`` before ``initialize``, or a second ``initialize``."""
        return self.code == ErrorCode.NOT_INITIALIZED

    @property
    def is_shutting_down(self) -> bool:
        """-32003: the bridge received ``shutdown``."""
        return self.code == ErrorCode.SHUTTING_DOWN

    @property
    def is_provider_unavailable(self) -> bool:
        """-32004: the provider cannot work as configured (e.g. no API key)."""
        return self.code == ErrorCode.PROVIDER_UNAVAILABLE

    @classmethod
    def from_wire(cls, error: Any, method: Optional[str] = None) -> "JsonRpcError":
        """Builds the right subclass from a response's ``error`` object."""
        if not isinstance(error, dict):
            return JsonRpcError(ErrorCode.INTERNAL_ERROR, f"malformed error object: {error!r}", None, method)
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = ErrorCode.INTERNAL_ERROR
        if not isinstance(message, str):
            message = repr(message)
        sub = _BY_CODE.get(code, JsonRpcError)
        return sub(code, message, error.get("data"), method)


class SessionBusyError(JsonRpcError):
    """-32001: a ``session/prompt`` for a session that already has one in flight
    (``kind == "session-busy"``), or that another bridge process on the same session root
    writes now (``kind == "session-locked"``: retry once that turn ended), or the bridge had no
    file descriptor left to open the session with (``kind == "out-of-descriptors"``: retry later)."""


class NotInitializedError(JsonRpcError):
    """-32002: not initialized, or already initialized."""


class ShuttingDownError(JsonRpcError):
    """-32003: any request after ``shutdown``."""


class ProviderUnavailableError(JsonRpcError):
    """-32004: the provider cannot work as configured (the message names what to set)."""

    def for_python(self) -> "ProviderUnavailableError":
        """The same error, its "no API key" advice said the SDK's way. The bridge tells its own
        callers to set the key in its environment or pass ``--secrets-fd``, a flag an SDK user
        never sees (the SDK passes it, from ``env=`` or ``os.environ``); any other message is
        kept as it is."""
        message = _MISSING_KEY.sub(_python_key_advice, self.message, count=1)
        return self if message == self.message else ProviderUnavailableError(self.code, message, self.data, self.method)


# The bridge's missing-key message (src/providers/openai-compatible/settings.ts missingKeyMessage):
# "needs VAR; set it in the bridge's environment[ or pass it with --secrets-fd]".
_MISSING_KEY = re.compile(r"needs (?P<var>[A-Z][A-Z0-9_]*_API_KEY); set it in the bridge's environment"
                          r"(?: or pass it with --secrets-fd)?")


def _python_key_advice(match: "re.Match[str]") -> str:
    var = match.group("var")
    return (f"needs {var}: pass it from Python with env={{\"{var}\": \"sk-...\"}} (DeepSeekHarness(env=...), "
            f"HarnessOptions.env, HarnessClient(env=...)) or set {var} in this Python process's environment; "
            "the SDK hands it to the bridge on a pipe, never in the bridge's environment")


class InvalidParamsError(JsonRpcError):
    """-32602: invalid params, unknown provider or unsupported protocol version."""


_BY_CODE: Dict[int, Type[JsonRpcError]] = {
    ErrorCode.SESSION_BUSY: SessionBusyError,
    ErrorCode.NOT_INITIALIZED: NotInitializedError,
    ErrorCode.SHUTTING_DOWN: ShuttingDownError,
    ErrorCode.PROVIDER_UNAVAILABLE: ProviderUnavailableError,
    ErrorCode.INVALID_PARAMS: InvalidParamsError,
}


class TransportClosedError(HarnessError):
    """The bridge process is gone (or was closed): pending and later requests fail with this.

    ``exit_code`` is the process's return code when known (negative: killed by that signal);
    ``stderr_tail`` holds the last lines the bridge wrote to stderr.
    """

    def __init__(self, reason: str, exit_code: Optional[int] = None, stderr_tail: Sequence[str] = ()) -> None:
        self.reason = reason
        self.exit_code = exit_code
        self.stderr_tail: List[str] = list(stderr_tail)
        super().__init__(_with_exit(reason, exit_code, self.stderr_tail))


def _with_exit(reason: str, exit_code: Optional[int], stderr_tail: List[str]) -> str:
    """``reason``, the exit code and the last 20 lines of stderr: a dead bridge's message."""
    msg = reason
    if exit_code is not None:
        msg += f" (exit code {exit_code})"
    if stderr_tail:
        msg += "\nlast lines of the bridge's stderr:\n" + "\n".join("  " + line for line in stderr_tail[-20:])
    return msg


class OpenFileLimitError(TransportClosedError):
    """The bridge died as it started, under an open-file limit too low for it: Node.js needs a
    limit of about 20 to start and crashes (SIGSEGV, SIGABRT) under less, before any of the
    bridge's code runs; the bridge needs about 64 to run bash and MCP servers too.

    ``limit`` is the hard limit the bridge inherited (Node raises its soft limit to the hard one
    as it starts, so the soft limit alone is never the cause); ``soft_limit`` the soft one.
    A :class:`TransportClosedError`, with its ``exit_code`` and ``stderr_tail``.
    """

    def __init__(self, reason: str, exit_code: Optional[int], stderr_tail: Sequence[str], soft_limit: int, limit: int) -> None:
        self.soft_limit = soft_limit
        self.limit = limit
        reason = (
            f"{reason}: the open-file limit is {limit} (ulimit -Hn; soft {soft_limit}), too low for the bridge, "
            "which needs about 20 file descriptors to start, 24 to run a turn and 64 to run its tools; raise it (e.g. `ulimit -n 1024`) "
            "where the bridge is started"
        )
        super().__init__(reason, exit_code, stderr_tail)


class ProcessLimitError(TransportClosedError):
    """The bridge died under a process limit (``RLIMIT_NPROC``, ``ulimit -u``) too low for it:
    the limit counts every thread of the user, and Node.js, which starts about 11 threads and
    more as a turn runs, aborts (SIGABRT) when it cannot create one, before any of the bridge's
    code can answer for it. Not enforced for root.

    ``soft_limit`` is the limit the bridge inherited (the soft one is enforced), ``limit`` the
    hard one, ``user_tasks`` how many processes and threads this user ran when the error was
    made (None when unknown). A :class:`TransportClosedError`, with its ``exit_code`` and
    ``stderr_tail``.
    """

    def __init__(self, reason: str, exit_code: Optional[int], stderr_tail: Sequence[str], soft_limit: int, limit: int,
                 user_tasks: Optional[int]) -> None:
        self.soft_limit = soft_limit
        self.limit = limit
        self.user_tasks = user_tasks
        super().__init__(f"{reason}: {describe_process_limit(soft_limit, limit, user_tasks)}", exit_code, stderr_tail)


def describe_process_limit(soft_limit: int, limit: int, user_tasks: Optional[int]) -> str:
    """Why a process limit is the likely cause, and what to do (:class:`ProcessLimitError` and
    :class:`BridgeStartTimeoutError` say it)."""
    running = f", and this user already runs {user_tasks} of them" if user_tasks is not None else ""
    return (f"the process limit is {soft_limit} (ulimit -u, RLIMIT_NPROC; hard {limit}), which counts this user's "
            f"processes and threads{running}: too low for the bridge, whose Node.js starts about 11 threads (it "
            "hangs or aborts when it cannot), 15 to run a turn, and more for each bash command and MCP server; raise "
            "it (e.g. `ulimit -u 4096`) where the bridge is started, or run it as a user with fewer processes")


class RequestTimeoutError(HarnessError, TimeoutError):
    """A request got no response in time. A timed-out ``session/prompt`` is cancelled on the bridge."""

    def __init__(self, method: str, timeout_seconds: float, detail: str = "") -> None:
        self.method = method
        self.timeout_seconds = timeout_seconds
        msg = f"{method} got no response within {timeout_seconds:g} s"
        if detail:
            msg += f"; {detail}"
        super().__init__(msg)


class BridgeStartTimeoutError(TransportClosedError, RequestTimeoutError):
    """The bridge did not answer ``initialize`` within the start-up timeout
    (``start_timeout_seconds``, plus its MCP servers' own ``startupTimeoutMs``; or a shorter
    ``request_timeout_seconds`` or ``timeout=``): it was killed (and reaped), and the client
    closed. Both a :class:`TransportClosedError` (a bridge that failed to start: ``exit_code``,
    ``stderr_tail``) and a :class:`RequestTimeoutError` (``method`` is ``"initialize"``,
    ``timeout_seconds`` the bound that passed). The message names the likely cause when it can
    be told: Node.js hangs at start under a low process limit (``ulimit -u``), and then
    ``process_soft_limit`` is that limit (else None)."""

    def __init__(self, timeout_seconds: float, exit_code: Optional[int], stderr_tail: Sequence[str], cause: str,
                 process_soft_limit: Optional[int] = None, source: str = "start_timeout_seconds") -> None:
        self.method = "initialize"
        self.timeout_seconds = timeout_seconds
        self.reason = (f"harness-bridge did not answer initialize within {timeout_seconds:g} s ({source}), "
                       f"so it was killed: {cause}")
        self.exit_code = exit_code
        self.stderr_tail = list(stderr_tail)
        self.process_soft_limit = process_soft_limit
        # Not TransportClosedError.__init__: its super() call would reach RequestTimeoutError's,
        # which takes other arguments. Exception's own keeps the message, as both would.
        HarnessError.__init__(self, _with_exit(self.reason, exit_code, self.stderr_tail))


class UnsendableRequestError(HarnessError, ValueError):
    """A request the SDK did not write, because the bridge could not have taken it: nothing was
    sent, no answer is awaited, and the client (its bridge and its sessions) stays usable. Also a
    ``ValueError``: what the caller passed is the problem. ``method`` is the request's method,
    ``param`` the path of the field at fault in its params (``"cwd"``,
    ``"contentBlocks[0].text"``), or None."""

    def __init__(self, message: str, method: str, param: Optional[str] = None) -> None:
        self.method = method
        self.param = param
        super().__init__(message)


class RequestTooLargeError(UnsendableRequestError):
    """The request is longer, as one JSON line, than the bridge's ``--max-line-bytes`` (16 MiB
    unless the command line says otherwise): the bridge would discard the line unanswered.
    ``size`` is the line's length in bytes, ``limit`` the bridge's; ``param`` names the largest
    string of the params (usually the culprit)."""

    def __init__(self, message: str, method: str, param: Optional[str], size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(message, method, param)


class NotUtf8Error(UnsendableRequestError):
    """A string of the request is not valid UTF-8: it holds a lone surrogate, as ``os.fsdecode``,
    ``os.listdir`` and ``os.getcwd`` make of a file name's bytes that are not UTF-8
    (``errors="surrogateescape"``). JSON text cannot carry it, so the request cannot be sent.
    ``param`` names the field (``"cwd"``, ``"contentBlocks[0].text"``), ``value`` is the string."""

    def __init__(self, message: str, method: str, param: Optional[str], value: str) -> None:
        self.value = value
        super().__init__(message, method, param)


class BridgeNotFoundError(HarnessError):
    """No usable ``harness-bridge`` binary. ``tried`` lists ``(place, detail)`` in order."""

    def __init__(self, message: str, tried: Sequence[Tuple[str, str]] = ()) -> None:
        self.tried: List[Tuple[str, str]] = list(tried)
        super().__init__(message)


class ProtocolError(HarnessError):
    """The bridge sent something this SDK cannot accept: a malformed result, or another protocol version."""

"""How long ``initialize`` may go unanswered before the bridge counts as failed to start, and
what is done then: the bridge is killed and reaped, and :class:`BridgeStartTimeoutError` says
why when it can be told.

Without a bound a bridge that never answers would hang its caller for ever (there is no
default ``request_timeout_seconds``): Node.js itself hangs at start under a low process limit
(:mod:`.process_limit`), before any of the bridge's code runs. What ``initialize`` may
legitimately wait for (src/server/initialize.ts), in order:

* loading the bridge's modules: well under a second, a few on a loaded CI machine;
* the sandbox probes when bash is offered: bubblewrap's, then Landlock's when bubblewrap cannot
  run, each bounded by the bridge at 10 s (src/sandbox/probe.ts, landlock.ts): at most 20 s;
* its MCP servers, started in parallel: each within its ``startupTimeoutMs`` (30 s unless the
  configuration says otherwise, up to 2^31-1 ms), then up to 1 s for a failed one's exit status
  (src/mcp/connection.ts): ``initialize`` answers once every one is connected or has failed.

So ``start_timeout_seconds``'s default (60 s, three times the longest wait of the bridge's own)
bounds the start without MCP servers, and the longest ``startupTimeoutMs`` of the servers
configured, plus :data:`MCP_MARGIN_SECONDS`, is added to it: no start the bridge itself would
complete is cut, whatever the servers' timeouts.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Mapping, Optional, Tuple

from ..errors import BridgeStartTimeoutError, describe_process_limit
from .process import BridgeProcess
from .process_limit import short_of_processes, user_tasks


__all__ = ["MCP_MARGIN_SECONDS", "check_start_timeout", "start_bound", "initialize_wait", "start_timed_out"]

#: The bridge's default ``startupTimeoutMs`` of an MCP server (src/protocol/mcp-types.ts).
DEFAULT_MCP_STARTUP_SECONDS = 30.0
#: Added to the longest MCP start: a failed server's exit status (1 s) and the scheduling around it.
MCP_MARGIN_SECONDS = 5.0


def check_start_timeout(value: Any) -> Optional[float]:
    """``value`` when it can bound a start: None (no bound) or a number above 0 (infinity
    included); else ValueError. NaN, 0 or a negative number timed every start out at once: a
    healthy bridge was killed, and BridgeStartTimeoutError blamed it or the machine."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"start_timeout_seconds must be a number of seconds above 0 or None, not {value!r}")
    if math.isnan(value) or value <= 0:
        raise ValueError(f"start_timeout_seconds must be above 0 (None for no start-up bound), not {value!r}")
    return float(value)


def start_bound(start_timeout_seconds: Optional[float], mcp_servers: Any) -> Optional[float]:
    """How long ``initialize`` may take with ``mcp_servers`` (its wire form, or None), under
    ``start_timeout_seconds`` (None: no bound; checked here too, as the attribute of a client
    may be changed after its options were)."""
    start_timeout_seconds = check_start_timeout(start_timeout_seconds)
    if start_timeout_seconds is None:
        return None
    servers = mcp_servers if isinstance(mcp_servers, Mapping) else {}
    if not servers:
        return start_timeout_seconds
    longest = max(_startup_seconds(server) for server in servers.values())
    return start_timeout_seconds + longest + MCP_MARGIN_SECONDS


def _startup_seconds(server: Any) -> float:
    value = server.get("startupTimeoutMs") if isinstance(server, Mapping) else None
    # A value the bridge refuses is answered at once (-32602): any default does then.
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value) / 1000
    return DEFAULT_MCP_STARTUP_SECONDS


def initialize_wait(timeout: Optional[float], request_timeout_seconds: Optional[float],
                    bound: Optional[float]) -> Tuple[Optional[float], str]:
    """The wait for ``initialize``'s answer and the name of what set it: ``timeout`` when the
    caller gave one, else the shorter of ``request_timeout_seconds`` (which bounded it before)
    and the start bound."""
    if timeout is not None:
        return timeout, "timeout="
    if request_timeout_seconds is not None and (bound is None or request_timeout_seconds < bound):
        return request_timeout_seconds, "request_timeout_seconds"
    return bound, "start_timeout_seconds"


def start_timed_out(process: BridgeProcess, timeout: float, source: str) -> BridgeStartTimeoutError:
    """Kills and reaps the bridge that did not answer ``initialize`` within ``timeout`` (set by
    ``source``), and says why it most likely did not. A bridge that never answered has nothing
    to lose (no session ran), and one stuck at start (a futex wait) heeds neither ``shutdown``
    nor the end of its stdin: SIGKILL at once, rather than the steps of ``close()`` (which
    follows, to end the SDK's threads and fail what waits)."""
    proc = process.proc
    process.kill()
    if process.stderr_thread is not threading.current_thread():
        process.stderr_thread.join(2.0)  # its last lines (its stderr ends with it, or soon after)
    tail = list(process.stderr_tail)
    limit = process.process_limit
    tasks = user_tasks() if limit is not None else None
    if limit is not None and short_of_processes(limit, tasks):
        cause = ("Node.js hangs at start this way when it cannot create its threads: "
                 + describe_process_limit(limit[0], limit[1], tasks))
        return BridgeStartTimeoutError(timeout, proc.returncode, tail, cause, limit[0], source)
    cause = ("it answers in well under a second, waiting longer only for its sandbox probes (at most "
             "20 s) and its MCP servers (each within its startupTimeoutMs, which the default bound adds); it may be "
             f"stuck (see its stderr below), or the machine overloaded: raise {source} if it needs longer")
    return BridgeStartTimeoutError(timeout, proc.returncode, tail, cause, None, source)

"""The bridge process: spawning it, its environment, draining its stderr, stopping it (close
stdin -> wait -> SIGTERM -> wait -> SIGKILL) and reaping every live client at interpreter exit.

Nothing here speaks the protocol: :mod:`.link` writes requests to :attr:`BridgeProcess.stdin` (a
:class:`~.stdin_writer.StdinWriter`, which never blocks) and its reader reads its stdout through
:meth:`BridgeProcess.read`.
"""

from __future__ import annotations

import atexit
import collections
import errno
import json
import logging
import os
import signal
import subprocess
import threading
import weakref
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import OpenFileLimitError, ProcessLimitError, TransportClosedError
from .forking import call_in_child
from .process_limit import died_for_want_of_threads, process_limit, says_thread_failed, short_of_processes, user_tasks
from .stdin_writer import StdinWriter

__all__ = ["STDERR_TAIL_LINES", "child_env", "spawn", "BridgeProcess", "reap_at_exit", "forget_at_exit"]

log = logging.getLogger("deepseek_harness")
bridge_log = logging.getLogger("deepseek_harness.bridge")

STDERR_TAIL_LINES = 400

PathLike = Union[str, "os.PathLike[str]"]


def child_env(extra: Mapping[str, str]) -> Dict[str, str]:
    """The caller's environment with ``extra`` added. ``NODE_OPTIONS`` is never inherited (it
    could load code into the bridge); it is passed only when ``extra`` gives it."""
    env = dict(os.environ)
    env.pop("NODE_OPTIONS", None)
    env.update(extra)
    return env


#: Provider keys: never put in the bridge's environment, handed over on a pipe (``--secrets-fd``).
#: The bridge accepts exactly these names (src/providers/types.ts ``PROVIDER_KEY_VARIABLES``).
PROVIDER_KEY_VARIABLES = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")
#: The most the bridge reads from ``--secrets-fd``; also below any pipe buffer on Linux.
MAX_SECRETS_BYTES = 64 * 1024


def spawn(cmd: List[str], env: Dict[str, str], cwd: Optional[PathLike]) -> "subprocess.Popen[bytes]":
    """Starts the bridge with three pipes. The one place a bridge process is created.

    Provider keys in ``env`` are taken out of it and written to a pipe the bridge reads at
    start (``--secrets-fd N``): a process's start-up environment stays readable in
    ``/proc/<pid>/environ`` whatever it deletes later, a pipe's content does not. The write end
    is closed before the bridge starts, so it reads to end of file at once."""
    env = dict(env)
    keys = {}
    for name in PROVIDER_KEY_VARIABLES:
        value = env.pop(name, None)
        if value:  # an empty variable is no key, and stays out of the environment too
            keys[name] = value
    if not keys:
        return _popen(cmd, env, cwd, ())
    payload = json.dumps(keys).encode("utf-8")
    # Written before the reader exists: more than a pipe's buffer would block here for ever.
    # The bridge refuses more than this anyway (src/secrets-fd.ts MAX_SECRETS_BYTES).
    if len(payload) > MAX_SECRETS_BYTES:
        raise TransportClosedError(f"the provider keys are {len(payload)} bytes; the bridge accepts at most {MAX_SECRETS_BYTES}")
    read_end, write_end = os.pipe()
    try:
        try:
            os.write(write_end, payload)
        finally:
            os.close(write_end)
        return _popen(cmd + ["--secrets-fd", str(read_end)], env, cwd, (read_end,))
    finally:
        os.close(read_end)


def _popen(cmd: List[str], env: Dict[str, str], cwd: Optional[PathLike], pass_fds: tuple) -> "subprocess.Popen[bytes]":
    return subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        bufsize=0,
        pass_fds=pass_fds,
    )


#: The hard open-file limit below which a bridge that dies as it starts is reported as
#: :class:`OpenFileLimitError`: Node.js needs a limit of about 20 to start (less, and it crashes
#: before any of the bridge's code runs: SIGABRT, SIGSEGV, or the loader's exit 127 with
#: "Error 24" on stderr), the bridge about 64 to run bash and MCP servers (docs/guarantees.md,
#: "A low open-file limit").
MIN_OPEN_FILES = 64
#: How a process that could not get its descriptors at start ends: killed by one of these
#: signals, or a line on stderr that says so (the dynamic loader's exit 127 says "Error 24";
#: 127 alone is any command not found, as in a wrapper script).
_STARVED_SIGNALS = frozenset(-s for s in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS))
_STARVED_WORDS = ("EMFILE", "Too many open files", "Error 24")
#: What a shell's (or the loader's) exit code says of a command that never ran (POSIX 2.8.2).
_NEVER_RAN = {
    126: "the code of a command that was found but could not be executed (not executable, or a folder)",
    127: ("the code of a command that was not found: a command the wrapper script runs is missing, "
          "or a shared library the dynamic loader needs"),
}


def open_file_limit() -> Optional[Tuple[int, int]]:
    """This process's (soft, hard) open-file limit, which a bridge it spawns inherits; None
    where there is no such limit (``resource`` is POSIX's)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def starved_of_descriptors(exit_code: Optional[int], stderr_tail: Sequence[str], limit: Optional[Tuple[int, int]],
                           answered: bool = False) -> bool:
    """Whether a bridge that ended with ``exit_code`` and ``stderr_tail`` most likely died for
    want of descriptors: the hard limit it inherited is below :data:`MIN_OPEN_FILES` and it
    ended the way a process starved of them at start does. Still running, or ``answered``
    (it wrote to stdout, so it had started: a bridge that starts under such a limit answers
    what it cannot do, and a later crash, a V8 out-of-memory abort say, is not the limit's): no."""
    if exit_code is None or limit is None or answered:
        return False
    hard = limit[1]
    if hard < 0 or hard >= MIN_OPEN_FILES:  # no limit (RLIM_INFINITY is -1), or enough
        return False
    if exit_code in _STARVED_SIGNALS:
        return True
    return exit_code != 0 and any(word in line for line in stderr_tail for word in _STARVED_WORDS)


class BridgeProcess:
    """A spawned bridge: its stdin (never blocking), its stdout for the reader, and a daemon thread that
    drains stderr continuously, keeps the last :data:`STDERR_TAIL_LINES` lines for error
    messages and forwards every line to the ``deepseek_harness.bridge`` logger."""

    def __init__(self, cmd: List[str], env: Dict[str, str], cwd: Optional[PathLike]) -> None:
        #: The (soft, hard) open-file limit the bridge inherits, read as it is spawned.
        self.open_file_limit = open_file_limit()
        #: The (soft, hard) process limit it inherits, read so too; None when not enforced for it.
        self.process_limit = process_limit()
        #: What was run (``bridge_bin``, which may be a wrapper script).
        self.command = cmd[0]
        #: Whether the bridge wrote anything to stdout (:meth:`read`): it started.
        self.answered = False
        #: The process that started the bridge: only it may talk to it (see :meth:`forked`).
        self.owner_pid = os.getpid()
        try:
            proc = spawn(cmd, env, cwd)
        except OSError as exc:
            raise TransportClosedError(f"could not start {cmd[0]}: {_start_failure(cmd[0], exc)}") from exc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.stdin = StdinWriter(proc.stdin)
        self.stdout = proc.stdout
        self.stderr_tail: Deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.stderr_thread = threading.Thread(
            target=self._drain_stderr, args=(proc.stderr,), name="harness-bridge-stderr", daemon=True
        )
        try:
            self.stderr_thread.start()
        except BaseException:  # no thread to be had (a low `ulimit -u`): no bridge left behind either
            self.kill()
            raise
        # A fork holds copies of the pipes it can never use (forked() refuses every use): closed
        # at once, rather than when the fork exits, which may be never (a pool's worker).
        call_in_child(self, "close_copies")

    def read(self, size: int) -> bytes:
        """Reads the bridge's stdout (the reader's only way to it), noting that it answered."""
        data = self.stdout.read(size)
        if data and not self.answered:
            self.answered = True
        return data

    def error(self, reason: str) -> TransportClosedError:
        """A :class:`TransportClosedError` with the exit code (if any) and the stderr tail; an
        :class:`OpenFileLimitError` when the process died for want of descriptors as it started."""
        code, tail, limit = self.proc.poll(), list(self.stderr_tail), self.open_file_limit
        files = limit is not None and starved_of_descriptors(code, tail, limit, self.answered)
        threads = self._short_of_threads(code, tail)
        # Both limits low and a bare SIGABRT: the open-file limit, blamed so before; a line of
        # stderr saying a thread could not be created: the process limit.
        if threads is not None and (not files or says_thread_failed(tail)):
            return ProcessLimitError(reason, code, tail, threads[0], threads[1], threads[2])
        if files and limit is not None:
            return OpenFileLimitError(reason, code, tail, limit[0], limit[1])
        if code in _NEVER_RAN and not self.answered:
            reason = f"{reason}: {self.command} exited with {code}, {_NEVER_RAN[code]} (its stderr says which)"
        return TransportClosedError(reason, code, tail)

    def _short_of_threads(self, code: Optional[int], tail: List[str]) -> Optional[Tuple[int, int, Optional[int]]]:
        """(soft limit, hard limit, the user's tasks) when the process died as Node does for want
        of a thread under a process limit too low for it; else None."""
        nproc = self.process_limit
        if nproc is None or not died_for_want_of_threads(code, tail):
            return None
        tasks = user_tasks()
        return (nproc[0], nproc[1], tasks) if short_of_processes(nproc, tasks) else None

    def forked(self) -> Optional[TransportClosedError]:
        """In a process forked from the one that started the bridge, the error every use of it
        raises: the bridge, the SDK's threads and the answers belong to the parent (the child
        has copies of the pipes and no reader). None in the parent."""
        if os.getpid() == self.owner_pid:
            return None
        return TransportClosedError(
            f"this client's bridge was started by process {self.owner_pid}, and this process is a fork of it: "
            "the bridge answers the parent only; start a new client in this process")

    def close_copies(self) -> None:
        """In a forked child: closes its copies of the bridge's pipes, and nothing else (no lock
        is taken: one held at the fork would never be released here)."""
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def kill(self) -> None:
        """SIGKILL, and reaps it: for a bridge that never started, which has nothing to lose and
        may heed nothing else (Node.js stuck at start on a futex polls neither stdin nor its parent)."""
        _send_signal(self.proc.kill)
        self.proc.wait()

    def wait(self, timeout: float) -> bool:
        """True once the process has exited, False when ``timeout`` passes first."""
        try:
            self.proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def exited(self, reason: str) -> TransportClosedError:
        """After stdout's EOF: waits (briefly) for the exit code and, once it exited, the last
        stderr lines (a bridge still running may keep stderr open for ever)."""
        if self.wait(2.0) and self.stderr_thread is not threading.current_thread():
            self.stderr_thread.join(2.0)
        return self.error(reason)

    def stop(self, timeout: float) -> None:
        """Closes stdin (what the bridge never read of it is dropped), then waits ``timeout``
        for the exit, then SIGTERM and waits again, then SIGKILL. Returns once the process has
        exited. Never waits on the pipe: a bridge that stops reading is stopped all the same."""
        proc = self.proc
        self.stdin.close()
        if self.wait(timeout):
            return
        log.warning("harness-bridge did not exit %g s after stdin closed; sending SIGTERM", timeout)
        _send_signal(proc.terminate)
        if self.wait(timeout):
            return
        log.warning("harness-bridge ignored SIGTERM for %g s; sending SIGKILL", timeout)
        _send_signal(proc.kill)
        proc.wait()

    def close_pipes(self) -> None:
        """After :meth:`stop` (and once the reader and the stderr thread are done): closes the
        read ends."""
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _drain_stderr(self, stderr: Any) -> None:
        tail = self.stderr_tail
        try:
            for raw in iter(stderr.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                tail.append(line)
                if line:
                    bridge_log.log(_level_of(line), "%s", line)
        except (OSError, ValueError):
            pass


def _start_failure(command: str, exc: OSError) -> str:
    """Why ``command`` could not be started. ``ENOENT`` for a file that exists is its ``#!``
    interpreter that is missing, which the OS reports as the script itself not being found."""
    if exc.errno == errno.ENOENT and os.path.isfile(command):
        try:
            with open(command, "rb") as script:
                first = script.readline(256)
        except OSError:
            first = b""
        if first.startswith(b"#!"):
            interpreter = first[2:].decode("utf-8", "replace").strip()
            return f"its interpreter ({interpreter!r}, from its #! line) was not found"
    return str(exc)


def _send_signal(send: Any) -> None:
    try:
        send()
    except OSError:  # it exited meanwhile
        pass


def _level_of(line: str) -> int:
    """The logging level of a bridge stderr line (``harness-bridge <level>: ...``)."""
    head = line[:40].lower()
    if "error" in head or "fatal" in head:
        return logging.ERROR
    if "warn" in head:
        return logging.WARNING
    if "debug" in head or "trace" in head:
        return logging.DEBUG
    return logging.INFO


# Live clients, closed at interpreter exit so that no bridge outlives its Python process.
_live: "weakref.WeakSet[Any]" = weakref.WeakSet()


def reap_at_exit(client: Any) -> None:
    """Closes ``client`` (anything with ``close()``) at interpreter exit unless forgotten first."""
    _live.add(client)


def forget_at_exit(client: Any) -> None:
    _live.discard(client)


def _reap() -> None:
    for client in list(_live):
        try:
            client.close()
        except Exception:  # pragma: no cover - best effort at interpreter exit
            pass


atexit.register(_reap)

"""What every section of the benchmarks shares: the paths, the run's context and counts, the
statistics, the JSON-RPC frames sent to the bridge, process probes, and `Result`, a section's
rows and goals (bench/report.py renders them)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DEFAULT_BIN = REPO / "bin" / "harness-bridge"
DEFAULT_BUNDLE = REPO / "build" / "harness-bridge.cjs"

# The SDK measured is this tree's, whatever the venv has installed; the sections import it after
# this module.
sys.path.insert(0, str(REPO / "python" / "sdk" / "src"))


def pinned_node() -> str:
    """The Node the binary embeds (scripts/pinned-node.mjs, package.json `config.embeddedNode`):
    the baselines (`node -e 0`, the stripped node, the Node writers) must be that runtime, not the
    build machine's node, or a ratio would compare two different Node versions."""
    if os.environ.get("HARNESS_BENCH_NODE"):
        return os.environ["HARNESS_BENCH_NODE"]
    system = shutil.which("node") or "node"
    script = REPO / "scripts" / "pinned-node.mjs"
    if script.exists():
        found = subprocess.run([system, str(script)], capture_output=True, text=True, cwd=REPO)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip()
    return system


# ---------------------------------------------------------------------------------------------
# The run's context and a section's counts

@dataclass(frozen=True)
class Count:
    """One of a section's counts: `quick` for --quick (enough to check that the section runs end
    to end, too small to mean anything), `full` for a real run."""

    quick: int
    full: int


@dataclass(frozen=True)
class Context:
    """What a section's `run(ctx)` gets: the build to measure, the baselines' node and the run's
    temporary folder (shared by the sections, removed after the run)."""

    quick: bool
    tmp: Path
    bin: Path
    bundle: Path
    node: str

    def count(self, count: Count) -> int:
        return count.quick if self.quick else count.full


# ---------------------------------------------------------------------------------------------
# Statistics


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


# ---------------------------------------------------------------------------------------------
# Frames and scripted models


def line(obj: Dict[str, Any]) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def initialize_request(cwd: str, model: str, **extra: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"cwd": cwd, "provider": "scripted", "model": model, **extra}})


def prompt_request(request_id: int, session_id: str, text: str = "go") -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt",
                 "params": {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": text}]}})


def write_script(tmp: Path, name: str, script: Dict[str, Any]) -> str:
    """A scripted model's file (the `scripted` provider's model name is its path)."""
    path = tmp / name
    path.write_text(json.dumps(script))
    return str(path)


# ---------------------------------------------------------------------------------------------
# Processes


def bridge_env(tmp: Path, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["HARNESS_SESSION_ROOT"] = str(tmp / "sessions")  # never the user's own state folder
    env.pop("NODE_OPTIONS", None)
    return env


def proc_status(pid: int) -> Dict[str, int]:
    """VmRSS / VmHWM of a process in kB (Linux)."""
    out: Dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for row in f:
                if row.startswith(("VmRSS:", "VmHWM:")):
                    key, value = row.split(":", 1)
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def mcp_available() -> bool:
    """The `mcp` Python client (bench/.venv has it): without it the MCP rows are skipped."""
    return importlib.util.find_spec("mcp") is not None


def mb(kb: float) -> str:
    return f"{kb / 1024:.1f} MB"


# ---------------------------------------------------------------------------------------------
# A section's result


class Result:
    """One section's rows, and the goals it checks."""

    def __init__(self, title: str, headers: Sequence[str]) -> None:
        self.title = title
        self.headers = list(headers)
        self.rows: List[List[str]] = []
        self.goals: List[Tuple[str, str, Optional[bool]]] = []  # (goal, measured, met)
        self.notes: List[str] = []

    def row(self, *cells: Any) -> None:
        self.rows.append([str(c) for c in cells])

    def goal(self, goal: str, measured: str, met: Optional[bool]) -> None:
        """met None: informational, never judged."""
        self.goals.append((goal, measured, met))

"""``python -m deepseek_harness``: what a bug report needs to say about this installation.

    python -m deepseek_harness          # readable
    python -m deepseek_harness --json   # the same as one JSON object

It prints the SDK's version, the harness-bridge binary the SDK would run here and which step of
the lookup chose it (``_binary.py``: ``bridge_bin``, ``$HARNESS_BRIDGE_BIN``, the bundled
binary, ``PATH``, an opted-in checkout) with what the earlier steps found, and whether bash
would be sandboxed: the bridge's own ``initialize`` answer (``sandbox: {bash, reason}``) in
``workspace-write``, then one real bash call through the offline ``scripted`` provider, since
``initialize`` reads only what it can without starting a process. Everything runs in a
temporary folder with its own session root; no API key is needed or read.

Exit status: 0 when the binary was found and answered, 1 otherwise (the output says why).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

from ._binary import locate_bridge_binary
from ._meta import __version__
from .errors import BridgeNotFoundError, HarnessError

PROBE_COMMAND = "echo sandbox-probe-ok"


def _probe_script() -> Dict[str, Any]:
    call = {"id": "probe", "name": "bash", "arguments": {"command": PROBE_COMMAND}}
    return {"turns": [{"steps": [{"toolCalls": [call]}, {"text": "probed"}]}]}


def _probe(binary: Path, report: Dict[str, Any]) -> None:
    """Fills report["bridge"] and report["sandbox"] from a bridge run in a temporary workspace."""
    from .api import DeepSeekHarness  # the SDK proper: only once a binary is there

    with tempfile.TemporaryDirectory(prefix="deepseek-harness-doctor-") as tmp:
        root = Path(tmp)
        (root / "workspace").mkdir()
        script = root / "probe.json"
        script.write_text(json.dumps(_probe_script()), encoding="utf-8")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with DeepSeekHarness(provider="scripted", model=str(script), cwd=root / "workspace", bridge_bin=binary,
                                 session_root=root / "sessions", permission_mode="workspace-write") as harness:
                init = harness.initialize_response
                assert init is not None
                runtime = init.server_info.runtime
                report["bridge"] = {"version": init.server_info.version, "protocolVersion": init.protocol_version,
                                    "runtime": None if runtime is None else runtime.model_dump(by_alias=True),
                                    "warnings": [str(w.message) for w in caught]}
                status = init.sandbox
                report["sandbox"] = {"mode": "workspace-write",
                                     "initialize": None if status is None else status.model_dump(exclude_none=True, by_alias=True)}
                result = harness.run("doctor: probe the bash sandbox")
        # The turn's durable events carry the wire's data (callId, isError, content blocks).
        results = [e.data for e in result.events if e.type == "tool/result" and e.data.get("callId") == "probe"]
        text = "".join(b.get("text", "") for b in results[0].get("content", []) if isinstance(b, dict)) if results else ""
        ran = bool(results) and results[0].get("isError") is False and text.startswith("sandbox-probe-ok")
        report["sandbox"]["bashCall"] = {
            "ran": ran,
            "output": text.strip()[:2000] if results else f"no result (turn {result.status}: {result.reason.kind})",
        }


def collect(env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    report: Dict[str, Any] = {
        "sdk": {"version": __version__, "package": str(Path(__file__).resolve().parent)},
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
    }
    try:
        location = locate_bridge_binary(env=env)
    except BridgeNotFoundError as exc:
        report["binary"] = {"found": False, "tried": [list(t) for t in exc.tried], "error": str(exc)}
        return report
    report["binary"] = {"found": True, "path": str(location.path), "source": location.source,
                        "triedBefore": [list(t) for t in location.tried]}
    try:
        _probe(location.path, report)
    except HarnessError as exc:
        report["bridge"] = {"error": f"{type(exc).__name__}: {exc}"}
    return report


def render(report: Dict[str, Any]) -> str:
    lines: List[str] = [
        f"deepseek-harness {report['sdk']['version']} ({report['sdk']['package']})",
        f"python {report['python']['version']} ({report['python']['executable']}) on {report['platform']}",
    ]
    binary = report["binary"]
    if not binary["found"]:
        lines.append("binary: not found")
        lines += [f"  - {place}: {detail}" for place, detail in binary["tried"]]
        return "\n".join(lines)
    lines.append(f"binary: {binary['path']}")
    lines.append(f"  chosen by: {binary['source']}")
    for place, detail in binary["triedBefore"]:
        lines.append(f"  before it, {place}: {detail}")
    bridge = report.get("bridge", {})
    if "error" in bridge:
        lines.append(f"  did not answer: {bridge['error']}")
        return "\n".join(lines)
    same = "same as the SDK" if bridge["version"] == report["sdk"]["version"] else f"the SDK is {report['sdk']['version']}"
    lines.append(f"  version: {bridge['version']} ({same}), protocol {bridge['protocolVersion']}")
    runtime = bridge.get("runtime")
    if runtime:
        lines.append(f"  runtime: node {runtime['node']} ({runtime['platform']}-{runtime['arch']})")
    sandbox = report["sandbox"]
    init = sandbox["initialize"] or {"bash": "unknown (a bridge older than the sandbox field)"}
    call = sandbox["bashCall"]
    verdicts = {"bubblewrap": "yes, inside bubblewrap",
                "landlock": f"yes, confined by Landlock (ABI {init.get('landlockAbi', '?')}) and seccomp"}
    verdict = verdicts.get(init["bash"], "no") if call["ran"] else "no"
    lines.append(f"bash sandboxed here (workspace-write): {verdict}")
    detail = init.get("reason") or (f"Landlock ABI {init['landlockAbi']}" if init.get("landlockAbi") else "")
    lines.append(f"  initialize: bash={init['bash']}" + (f" ({detail})" if detail else ""))
    lines.append(f"  a bash call: {'ran' if call['ran'] else 'refused'}" + ("" if call["ran"] else f": {call['output']}"))
    return "\n".join(lines)


def ok(report: Dict[str, Any]) -> bool:
    return bool(report["binary"]["found"]) and "error" not in report.get("bridge", {"error": "not run"})


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deepseek_harness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = collect(dict(os.environ))
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0 if ok(report) else 1

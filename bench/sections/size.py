"""bin/harness-bridge against a stripped copy of the node it was made from."""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Dict

from common import Context, Count, Result

COUNTS: Dict[str, Count] = {}  # one measurement of each file


def run(ctx: Context) -> Result:
    stripped = ctx.tmp / "node-stripped"
    shutil.copyfile(os.path.realpath(ctx.node), stripped)
    note = None
    try:
        subprocess.run(["strip", str(stripped)], check=True, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        note = "strip is not available: the node copy is unstripped (the build keeps symbols too, then)"
    node_size = stripped.stat().st_size
    bin_size = ctx.bin.stat().st_size
    bundle_size = ctx.bundle.stat().st_size
    res = Result("Size", ["file", "bytes", "ratio vs stripped node"])
    version = subprocess.run([ctx.node, "--version"], capture_output=True, text=True).stdout.strip()
    res.row(f"node {version}, stripped", f"{node_size:,}", "1.00x")
    res.row("bin/harness-bridge", f"{bin_size:,}", f"{bin_size / node_size:.3f}x")
    res.row("build/harness-bridge.cjs (the bundle inside it)", f"{bundle_size:,}", f"{bundle_size / node_size:.4f}x")
    ratio = bin_size / node_size
    res.goal("size: binary <= 1.05x the stripped node", f"{ratio:.3f}x", ratio <= 1.05)
    if note:
        res.notes.append(note)
    stripped.unlink()
    return res

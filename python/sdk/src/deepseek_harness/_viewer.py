"""``python -m deepseek_harness view [options]``: the session viewer of the bridge binary.

The viewer is ``harness-bridge view`` (a read-only page on 127.0.0.1 that lists the
workspace's sessions and follows one as a timeline); this only finds the binary the SDK would
run (``_binary.py``: ``HARNESS_BRIDGE_BIN``, the bundled one, then ``PATH``) and becomes it, so
the options, the URL it prints on stdout and its exit on Ctrl-C are the binary's own.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

from ._binary import find_bridge_binary
from .errors import BridgeNotFoundError


def main(argv: Optional[List[str]] = None) -> int:
    """Replaces this process with ``harness-bridge view ARGV``; returns 1 (with the reason on
    stderr) only when there is no binary to run."""
    args = list(sys.argv[2:] if argv is None else argv)
    try:
        binary = find_bridge_binary()
    except BridgeNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    # exec, not a child: signals (Ctrl-C, SIGTERM) reach the viewer itself, and its exit code is ours.
    os.execv(str(binary), [str(binary), "view", *args])
    return 0  # not reached

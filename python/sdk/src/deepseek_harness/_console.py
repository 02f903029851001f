"""The ``harness-bridge`` console script of the platform wheel: the bundled binary itself.

It replaces this Python process with the binary (``exec``), so the arguments, the standard
streams, signals and the exit code are the binary's own; Python adds nothing after start-up.
Only the bundled binary is run, never one found through the SDK's lookup: this script is itself
``harness-bridge`` on ``PATH``, and running "the harness-bridge on PATH" could be itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import List, Optional

from ._binary import HOW_TO_GET_IT, bundled_binary_path, bundled_binary_problem


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    binary = bundled_binary_path()
    why = bundled_binary_problem()
    if why is not None:
        sys.stderr.write(f"harness-bridge: this install of deepseek-harness has no bundled binary ({binary} {why}).\n{HOW_TO_GET_IT}\n")
        return 127
    if os.name == "nt":  # no exec on Windows: wait and pass the exit code on
        return subprocess.call([str(binary), *args])
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [str(binary), *args])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())

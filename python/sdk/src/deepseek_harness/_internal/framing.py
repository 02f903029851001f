"""Line framing of the bridge's stdout: blocks in, lists of lines out.

The reader reads in blocks and splits lines itself (no length limit: a long line is collected
in pieces and joined once), and hands each block's lines over as one batch, so the consumer
wakes once per block, not once per notification."""

from __future__ import annotations

import logging
from typing import Callable, List

__all__ = ["READ_SIZE", "read_frames"]

log = logging.getLogger("deepseek_harness")

READ_SIZE = 1 << 16


def read_frames(read: Callable[[int], bytes], dispatch: Callable[[List[bytes]], None]) -> None:
    """Calls ``dispatch`` with the lines of each block ``read`` returns until EOF or a read
    error (the pipe closed under it); a last unterminated line is dispatched alone. What
    ``dispatch`` raises propagates."""
    parts: List[bytes] = []  # pieces of an unterminated line
    while True:
        try:
            data = read(READ_SIZE)
        except (OSError, ValueError) as exc:  # ValueError: close() closed the pipe
            log.debug("reading harness-bridge stdout failed: %s", exc)
            break
        if not data:
            break
        nl = data.rfind(b"\n")
        if nl < 0:
            parts.append(data)
            continue
        if parts:
            parts.append(data[: nl + 1])
            block = b"".join(parts)
            parts = []
        else:
            block = data[: nl + 1] if nl + 1 < len(data) else data
        if nl + 1 < len(data):
            parts.append(data[nl + 1 :])
        dispatch(block.split(b"\n"))
    if parts:
        dispatch([b"".join(parts)])

"""The text of a list of content blocks, for the event models' ``text`` properties (shared by
:mod:`..turn_events` and :mod:`..feature_events`, so it lives here rather than as one public
module's private name)."""

from __future__ import annotations

from typing import Any, List, Type


def texts(blocks: List[Any], kind: Type[Any]) -> str:
    """The ``text`` of the blocks of class ``kind``, joined (other blocks, dicts included, skipped)."""
    return "".join(b.text for b in blocks if isinstance(b, kind))

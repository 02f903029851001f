"""How a turn ended and what it used: the reason (and the status it maps to), token usage and cost.

One concept the events, the responses and the results all share: ``turn/end``'s ``reason`` and
``usage``, a ``session/prompt`` response, a :class:`TurnResult <deepseek_harness.TurnResult>`'s
totals.
"""

from __future__ import annotations

from typing import Literal, Optional

from .base import WireModel

__all__ = ["TurnStatus", "status_of", "TurnEndReason", "Usage"]

TurnStatus = Literal["ok", "error", "aborted"]


def status_of(kind: str) -> TurnStatus:
    """Maps a reason kind to a turn status: completed → ok, aborted → aborted, else error."""
    if kind == "completed":
        return "ok"
    if kind == "aborted":
        return "aborted"
    return "error"


class TurnEndReason(WireModel):
    """Why a turn ended.

    Known kinds: ``completed``, ``aborted``, ``max-tokens``, ``max-steps`` (``limit``),
    ``model-error`` (``message``, ``http_status``, ``code``), ``internal-error``
    (``message``), ``blocked`` (``message``: a prompt-submit hook's reason), ``budget``
    (``limit_usd``, ``cost_usd``: the prompt's ``max_cost_usd`` was reached). Unknown kinds are
    kept as they are (extra fields allowed) and map to
    status ``error``.
    """

    kind: str
    message: Optional[str] = None
    limit: Optional[int] = None
    http_status: Optional[int] = None
    code: Optional[str] = None
    limit_usd: Optional[float] = None
    cost_usd: Optional[float] = None

    @property
    def status(self) -> TurnStatus:
        """The status this reason maps to."""
        return status_of(self.kind)

    def describe(self) -> str:
        """The reason in one line, with every detail it carries: ``completed``, ``max-steps
        (limit 10)``, ``model-error (HTTP 401, code invalid_request_error): Authentication
        Fails, ...``. What a program prints when a turn did not go well."""
        details = [f"HTTP {self.http_status}"] if self.http_status is not None else []
        details += [f"code {self.code}"] if self.code else []
        details += [f"limit {self.limit}"] if self.limit is not None else []
        details += [f"spent ${self.cost_usd:.6f} of ${self.limit_usd:.6f}"] if self.limit_usd is not None and self.cost_usd is not None else []
        text = self.kind + (f" ({', '.join(details)})" if details else "")
        return f"{text}: {self.message}" if self.message else text


class Usage(WireModel):
    """Token usage of one model request, or summed over a turn."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: Optional[int] = None
    cache_hit_tokens: Optional[int] = None
    #: Input tokens not served from the prompt cache (DeepSeek's ``prompt_cache_miss_tokens``).
    cache_miss_tokens: Optional[int] = None
    #: What the request(s) cost in US dollars, when the model's prices are known (the bridge's
    #: table of DeepSeek's models, or ``prices=``); None otherwise, never a guess.
    cost_usd: Optional[float] = None

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented

        def opt(a: Optional[int], b: Optional[int]) -> Optional[int]:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=opt(self.reasoning_tokens, other.reasoning_tokens),
            cache_hit_tokens=opt(self.cache_hit_tokens, other.cache_hit_tokens),
            cache_miss_tokens=opt(self.cache_miss_tokens, other.cache_miss_tokens),
            cost_usd=None if self.cost_usd is None and other.cost_usd is None else (self.cost_usd or 0.0) + (other.cost_usd or 0.0),
        )

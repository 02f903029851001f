"""The frames the SDK writes to the bridge, as bytes: one JSON line per request, or an error
that says why the request cannot go.

Invariant: every line written is one the bridge takes, so every request written is answered.
The bridge discards a line longer than its ``--max-line-bytes`` (default 16 MiB) with an error
of ``id: null`` (docs/guarantees.md, section 1): the request's waiter would never hear of it and
the call would wait for ever. So the SDK knows the limit of the command line it started the
bridge with (:func:`max_line_bytes`) and refuses a longer frame before writing it
(:class:`~deepseek_harness.RequestTooLargeError`), before any waiter is registered. Likewise a
string holding a lone surrogate (a file name's bytes that are not UTF-8, as Python decodes
them) cannot be written as UTF-8 at all: :class:`~deepseek_harness.NotUtf8Error` names the field.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator, Optional, Sequence, Tuple

from ..errors import NotUtf8Error, RequestTooLargeError

__all__ = ["DEFAULT_MAX_LINE_BYTES", "max_line_bytes", "encode_request"]

#: The bridge's own default (src/transport/server-endpoint.ts DEFAULT_MAX_LINE_BYTES); the
#: limit counts the line's bytes without its newline.
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

_OPTION = "--max-line-bytes"

# What JavaScript's Number() takes from a string (the bridge's positiveInt parses the value with
# it): the whitespace it trims, decimal literals, and 0x / 0o / 0b integers without a sign.
_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_RADIX = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def max_line_bytes(argv: Sequence[str]) -> int:
    """The line limit of a bridge started with ``argv`` (the executable first): the value of its
    last ``--max-line-bytes N`` or ``--max-line-bytes=N`` (``extra_args`` come last, so theirs
    wins, as in the bridge's parser: src/cli-args.ts), read as the bridge reads it; else the
    default. A value the bridge refuses stops it at once (a usage error), so what is returned
    for one does not matter."""
    value: Optional[str] = None
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break  # the end of the options (the bridge refuses anything after it)
        if arg == _OPTION and i + 1 < len(args):
            value = args[i + 1]
            i += 1
        elif arg.startswith(_OPTION + "="):
            value = arg[len(_OPTION) + 1:]
        i += 1
    limit = _js_positive_int(value) if value is not None else None
    return limit if limit is not None else DEFAULT_MAX_LINE_BYTES


def _js_positive_int(value: str) -> Optional[int]:
    """``value`` as src/cli.ts positiveInt takes it (``Number(value)``, a whole number >= 1), or None."""
    text = value.strip(_JS_SPACE)
    if not text:
        return None
    radix = _JS_RADIX.fullmatch(text)
    try:
        if radix is not None:
            number = float(int(text, 0))
        elif _JS_DECIMAL.fullmatch(text) is not None:
            number = float(text)
        else:
            return None
    except (OverflowError, ValueError):
        return None
    if not math.isfinite(number) or number != math.floor(number) or number < 1:
        return None
    return int(number)


def encode_request(frame: Any, limit: int) -> bytes:
    """``frame`` as the line to write (newline included). Raises ``ValueError`` for NaN or
    infinity (not JSON: the bridge would refuse the line, and the id with it), ``TypeError`` for
    a value JSON has no form for, :class:`NotUtf8Error` for a string with a lone surrogate, and
    :class:`RequestTooLargeError` past ``limit``."""
    text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise _not_utf8(frame) from None
    if len(data) > limit:
        raise _too_large(frame, len(data), limit)
    return data + b"\n"


def _too_large(frame: Any, size: int, limit: int) -> RequestTooLargeError:
    method = str(frame.get("method"))
    largest = max(_strings(frame.get("params"), ""), key=lambda found: len(found[1]), default=None)
    param = largest[0] if largest is not None else None
    part = f"; its largest part is {param} ({len(largest[1])} characters)" if largest is not None else ""
    # Room for what the caller meant to send, rounded up to a whole KiB.
    enough = (size + 1023) // 1024 * 1024
    return RequestTooLargeError(
        f"{method} is {size} bytes as a JSON line, more than the {limit} bytes the bridge takes (--max-line-bytes): "
        f"the bridge would discard it unanswered, so it was not sent (the client is still usable){part}. Send less "
        "(put a long text in a file of the workspace and ask for it to be read), or start the bridge with a higher "
        f"limit: extra_args=[\"--max-line-bytes\", \"{enough}\"]",
        method, param, size, limit)


#: A lone surrogate: what Python makes of a byte that is not UTF-8, and what JSON text cannot
#: carry (the one pattern of the SDK's requests and answers).
SURROGATE = re.compile("[\ud800-\udfff]")


#: The fields whose values are not shown in a NotUtf8Error: an MCP server's ``env`` and
#: ``headers`` values: any path under ``.env.`` or ``.headers.`` (a name with a dot in it
#: included; a key hidden with them, or a server whose name holds ``.env.``, costs nothing).
_SECRET_FIELD = re.compile(r"^mcpServers\..*\.(?:env|headers)\.", re.DOTALL)


def _not_utf8(frame: Any) -> NotUtf8Error:
    method = str(frame.get("method"))
    param, value, at = next(((where, text, found.start()) for where, text in _strings(frame.get("params"), "")
                             if (found := SURROGATE.search(text)) is not None), ("", "", 0))
    code = ord(value[at]) if value else 0
    if 0xDC80 <= code <= 0xDCFF:
        # surrogateescape's mark of one byte that is not UTF-8 (U+DC80 + the byte).
        why = (f"where the bytes were not UTF-8, it holds U+{code:04X}, Python's stand-in for the byte 0x{code - 0xDC00:02x} "
               "(errors='surrogateescape': os.fsdecode, os.listdir, os.getcwd, sys.argv make such strings of file names)")
    else:
        why = f"it holds the lone surrogate U+{code:04X}, which is no character"
    what = "path" if param.lower().endswith(("cwd", "path", "root", "model")) else "text"
    fix = ("give the folder or file a name that is valid UTF-8 (or a symbolic link with one) and pass that"
           if what == "path" else "decode the bytes it came from with their real encoding, or with errors='replace'")
    # A long text (a whole prompt) is shown around the character only. An MCP server's env or
    # headers value is not shown at all: such values are tokens and passwords, and the message
    # goes into tracebacks and logs (the ``value`` attribute still holds it, for the caller).
    if _SECRET_FIELD.search(param):
        shown = f"its value ({len(value)} characters, not shown: env and headers values may be secrets)"
    else:
        shown = repr(value) if len(value) <= 200 else f"{value[max(0, at - 60):at + 60]!r} (an excerpt)"
    return NotUtf8Error(
        f"{method}'s {param or 'params'} is not valid UTF-8: {shown} at character {at}: {why}. JSON cannot carry it, "
        f"so the request was not sent (the client is still usable): {fix}",
        method, param or None, value)


def _strings(value: Any, path: str) -> Iterator[Tuple[str, str]]:
    """Every string of a JSON value (keys included) with the path of the field that holds it."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                yield where, key
            yield from _strings(item, where)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")

"""File names as Python hands them over, made into the UTF-8 text the wire carries.

Python decodes a file name's bytes with the filesystem encoding and ``errors="surrogateescape"``
(``os.getcwd``, ``os.listdir``, ``os.fsdecode``, ``sys.argv``): each byte it cannot decode
becomes a lone surrogate U+DC80–U+DCFF. Under the C locale without UTF-8 mode (``LC_ALL=C
python -X utf8=0``, an old CI image, a cron job) that encoding is ASCII, so every byte of a
perfectly valid UTF-8 name that is not ASCII is escaped so: ``/tmp/wörk`` arrives as
``'/tmp/w\\udcc3\\udcb6rk'``. Its bytes are UTF-8, and the name is ``/tmp/wörk``: that is what is
sent. Only a name whose bytes are not UTF-8 stays as it is, and is refused by the encoder
(:class:`~deepseek_harness.NotUtf8Error`, :mod:`.outgoing`), since JSON text cannot name it.

Applied to the fields of ``initialize`` that name files (:func:`utf8_paths`): ``cwd``, the
scripted ``model``'s path, and an MCP server's ``command``, ``args``, ``cwd`` and ``env`` values.
Prompts and answers are text, not names, and are left alone.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping

from .outgoing import SURROGATE

__all__ = ["utf8_name", "utf8_paths"]


def utf8_name(text: str) -> str:
    """``text`` with its surrogate escapes read back as UTF-8, when its bytes are UTF-8; else
    ``text`` unchanged (a name whose bytes are not UTF-8, or a surrogate that is no escape)."""
    if SURROGATE.search(text) is None:
        return text
    try:
        raw = os.fsencode(text)  # the bytes the name had, under the encoding that escaped them
    except UnicodeEncodeError:
        try:  # escapes beside characters the filesystem encoding cannot hold (made elsewhere)
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text  # a lone surrogate outside U+DC80–U+DCFF: no byte's escape
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return text


def utf8_paths(params: Dict[str, Any]) -> Dict[str, Any]:
    """``initialize``'s params (wire names) with every field that names a file as UTF-8 text
    (:func:`utf8_name`); the rest as it is. A new dict; ``params`` is left alone."""
    out = dict(params)
    for field in ("cwd", "model"):
        if isinstance(out.get(field), str):
            out[field] = utf8_name(out[field])
    servers = out.get("mcpServers")
    if isinstance(servers, Mapping):
        out["mcpServers"] = {name: _server(config) for name, config in servers.items()}
    return out


def _server(config: Any) -> Any:
    if not isinstance(config, Mapping):
        return config  # the bridge answers -32602 naming it
    server = dict(config)
    for field in ("command", "cwd"):
        if isinstance(server.get(field), str):
            server[field] = utf8_name(server[field])
    if isinstance(server.get("args"), list):
        server["args"] = [utf8_name(arg) if isinstance(arg, str) else arg for arg in server["args"]]
    if isinstance(server.get("env"), Mapping):
        server["env"] = {key: utf8_name(value) if isinstance(value, str) else value for key, value in server["env"].items()}
    return server

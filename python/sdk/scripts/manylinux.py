#!/usr/bin/env python3
"""Which manylinux tag a Linux executable may carry, read from the executable itself.

    python python/sdk/scripts/manylinux.py bin/harness-bridge   # prints manylinux_2_28_x86_64

A wheel's platform tag promises that its native code runs on every distribution of that
policy (PEP 600): it may link only the policy's libraries, and ask them only for symbol
versions the policy's oldest distribution has. This reads both from the ELF file (its
``DT_NEEDED`` entries and its ``.gnu.version_r`` requirements, as ``objdump -p`` shows them)
with the standard library only, for x86_64 and aarch64 executables built on any host.

The policy below is auditwheel's ``manylinux_2_28`` (auditwheel 6.8, policy/manylinux-policy.json),
the one PyPI and pip apply; the dynamic loader (``ld-linux-*``) is exempt there as here.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

POLICY = "manylinux_2_28"

# e_machine -> the architecture in platform tags.
MACHINES = {62: "x86_64", 183: "aarch64"}


def _series(prefix: str, last: int) -> list[str]:
    return [prefix] + [f"{prefix}.{i}" for i in range(1, last + 1)]


_GLIBCXX = _series("3.4", 24)
_CXXABI = _series("1.3", 11) + ["TM_1"]
_GLIBC_TAIL = ["2.17", "2.18", "2.22", "2.23", "2.24", "2.25", "2.26", "2.27", "2.28"]
SYMBOL_VERSIONS: dict[str, dict[str, frozenset[str]]] = {
    "x86_64": {
        "GLIBC": frozenset(["2.2.5", "2.2.6", "2.3", "2.3.2", "2.3.3", "2.3.4"]
                           + [f"2.{i}" for i in range(4, 17)] + _GLIBC_TAIL),
        "GLIBCXX": frozenset(_GLIBCXX),
        "CXXABI": frozenset(_CXXABI + ["FLOAT128"]),
        "GCC": frozenset(["3.0", "3.3", "3.3.1", "3.4", "3.4.2", "3.4.4", "4.0.0", "4.2.0", "4.3.0", "4.7.0", "4.8.0", "7.0.0"]),
    },
    "aarch64": {
        "GLIBC": frozenset(["2.0"] + _GLIBC_TAIL),
        "GLIBCXX": frozenset(_GLIBCXX),
        "CXXABI": frozenset(_CXXABI),
        "GCC": frozenset(["3.0", "3.3", "3.3.1", "3.4", "3.4.2", "3.4.4", "4.0.0", "4.2.0", "4.3.0", "4.5.0", "4.7.0", "7.0.0"]),
    },
}
LIBRARIES = frozenset([
    "libatomic.so.1", "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libmvec.so.1", "libanl.so.1",
    "libdl.so.2", "librt.so.1", "libc.so.6", "libnsl.so.1", "libutil.so.1", "libpthread.so.0",
    "libX11.so.6", "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libGL.so.1",
    "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0", "libresolv.so.2", "libexpat.so.1",
    "libz.so.1",
])

SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NEEDED = 1


@dataclass
class ElfNeeds:
    machine: str
    libraries: list[str] = field(default_factory=list)
    #: library -> the symbol version names required from it (``GLIBC_2.28``, ``GLIBCXX_3.4.21``)
    versions: dict[str, set[str]] = field(default_factory=dict)


class NotSupported(ValueError):
    """Not a 64-bit little-endian x86_64 or aarch64 ELF file."""


def read_needs(path: Path) -> ElfNeeds:
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise NotSupported(f"{path}: not a 64-bit little-endian ELF file")
    (machine,) = struct.unpack_from("<H", data, 18)
    if machine not in MACHINES:
        raise NotSupported(f"{path}: ELF machine {machine} is neither x86_64 nor aarch64")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def string(table: int, offset: int) -> str:
        start = sections[table][4] + offset
        return data[start:data.index(b"\0", start)].decode()

    needs = ElfNeeds(MACHINES[machine])
    for _name, kind, _flags, _addr, offset, size, link, info, _align, _entsize in sections:
        if kind == SHT_DYNAMIC:
            for pos in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", data, pos)
                if tag == 0:
                    break
                if tag == DT_NEEDED:
                    needs.libraries.append(string(link, value))
        elif kind == SHT_GNU_VERNEED:
            pos = offset
            for _ in range(info):
                _version, count, file, aux, following = struct.unpack_from("<HHIII", data, pos)
                names = needs.versions.setdefault(string(link, file), set())
                apos = pos + aux
                for _ in range(count):
                    _hash, _vflags, _other, name, anext = struct.unpack_from("<IHHII", data, apos)
                    names.add(string(link, name))
                    apos += anext
                pos += following
    return needs


def violations(needs: ElfNeeds) -> list[str]:
    """What keeps these needs out of the manylinux_2_28 policy (empty: they fit)."""
    allowed = SYMBOL_VERSIONS[needs.machine]
    problems = [f"links {lib}, which {POLICY} does not provide" for lib in needs.libraries
                if lib not in LIBRARIES and not lib.startswith("ld-linux")]
    for lib, names in sorted(needs.versions.items()):
        if lib.startswith("ld-linux"):
            continue
        for name in sorted(names):
            space, _, version = name.partition("_")
            # The namespace ends at the first "_": CXXABI_TM_1 is version TM_1, GLIBC_PRIVATE is not allowed.
            if version not in allowed.get(space, frozenset()):
                problems.append(f"needs {name} from {lib}, newer than (or outside) {POLICY}")
    return problems


def platform_tag(path: Path) -> str:
    """``manylinux_2_28_<arch>`` for this executable, or ValueError naming what does not fit."""
    needs = read_needs(path)
    problems = violations(needs)
    if problems:
        raise ValueError(f"{path} does not fit {POLICY}: " + "; ".join(problems))
    return f"{POLICY}_{needs.machine}"


if __name__ == "__main__":
    try:
        print(platform_tag(Path(sys.argv[1])))
    except (OSError, ValueError) as exc:
        print(f"manylinux: {exc}", file=sys.stderr)
        sys.exit(1)

"""The wheel's manylinux tag is earned: the binary links only the policy's libraries and asks
them only for symbol versions manylinux_2_28 provides (read from the ELF file itself, and
cross-checked against binutils' own reading when objdump is installed)."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import real_bridge_or_skip

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import manylinux  # noqa: E402

ARM64_LIBSTDCXX = Path("/usr/aarch64-linux-gnu/lib/libstdc++.so.6")


def objdump_needs(path: Path) -> tuple[list[str], dict[str, set[str]]]:
    """DT_NEEDED and version references as `objdump -p` prints them."""
    out = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True, check=True).stdout
    libraries = re.findall(r"^\s+NEEDED\s+(\S+)$", out, re.M)
    versions: dict[str, set[str]] = {}
    current = None
    for line in out.split("Version References:")[-1].splitlines():
        m = re.match(r"\s+required from (\S+):$", line)
        if m:
            current = versions.setdefault(m.group(1), set())
            continue
        m = re.match(r"\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)$", line)
        if m and current is not None:
            current.add(m.group(1))
    return libraries, versions


def test_the_binary_fits_manylinux_2_28():
    binary = real_bridge_or_skip()
    needs = manylinux.read_needs(binary)
    assert needs.machine == platform.machine()
    assert "libc.so.6" in needs.libraries
    glibc = {name for name in needs.versions["libc.so.6"] if name.startswith("GLIBC_2.")}
    assert "GLIBC_2.28" in glibc  # what Node 20 needs at most; the tag is no looser than that
    assert manylinux.violations(needs) == []
    assert manylinux.platform_tag(binary) == f"manylinux_2_28_{needs.machine}"


@pytest.mark.skipif(shutil.which("objdump") is None, reason="binutils' objdump is not installed")
def test_the_elf_reading_agrees_with_objdump():
    binary = real_bridge_or_skip()
    needs = manylinux.read_needs(binary)
    libraries, versions = objdump_needs(binary)
    assert needs.libraries == libraries
    assert needs.versions == versions


def test_newer_symbol_versions_and_foreign_libraries_are_refused():
    needs = manylinux.ElfNeeds("x86_64", ["libc.so.6", "libssl.so.3"],
                               {"libc.so.6": {"GLIBC_2.28", "GLIBC_2.29", "GLIBC_PRIVATE"},
                                "libstdc++.so.6": {"GLIBCXX_3.4.24", "GLIBCXX_3.4.25", "CXXABI_TM_1"}})
    problems = manylinux.violations(needs)
    assert problems == [
        "links libssl.so.3, which manylinux_2_28 does not provide",
        "needs GLIBC_2.29 from libc.so.6, newer than (or outside) manylinux_2_28",
        "needs GLIBC_PRIVATE from libc.so.6, newer than (or outside) manylinux_2_28",
        "needs GLIBCXX_3.4.25 from libstdc++.so.6, newer than (or outside) manylinux_2_28",
    ]


@pytest.mark.skipif(not ARM64_LIBSTDCXX.is_file(), reason="libstdc++6-arm64-cross is not installed")
def test_an_arm64_library_built_for_a_newer_glibc_is_refused(tmp_path):
    # Debian 12's arm64 libstdc++ needs glibc 2.32+: a real ELF that must not get the tag.
    with pytest.raises(ValueError, match=r"does not fit manylinux_2_28: .*GLIBC_2\.3[2-9]"):
        manylinux.platform_tag(ARM64_LIBSTDCXX)
    assert manylinux.read_needs(ARM64_LIBSTDCXX).machine == "aarch64"


def test_a_file_that_is_not_elf_is_refused(tmp_path):
    script = tmp_path / "harness-bridge"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(manylinux.NotSupported):
        manylinux.read_needs(script)

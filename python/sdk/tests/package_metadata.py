"""What a package index and `pip show` read from a built distribution's metadata (a wheel's
METADATA, an sdist's PKG-INFO), checked the same way for both (test_wheel.py, test_sdist.py)."""

from __future__ import annotations

import email.parser
import re
from pathlib import Path
from typing import List

# Markdown links and images `[text](target)`, and reference definitions `[label]: target`.
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)", re.M)


def relative_links(markdown: str) -> List[str]:
    """Link targets a package index cannot follow: neither absolute (scheme://, mailto:) nor
    an anchor of the page itself."""
    targets = INLINE_LINK.findall(markdown) + [m.group(1) for m in REFERENCE.finditer(markdown)]
    return [t for t in targets if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", t, re.I)]


def check(metadata_text: str, repo_root: Path) -> None:
    message = email.parser.Parser().parsestr(metadata_text)
    assert message["License-Expression"] == "MIT"
    assert message["Author"] == "harness-bridge contributors"  # LICENSE's copyright holder
    assert message["Description-Content-Type"] == "text/markdown"
    description = message.get_payload()
    assert isinstance(description, str)
    readme = (repo_root / "python" / "sdk" / "README.md").read_text(encoding="utf-8")
    changelog = (repo_root / "CHANGELOG.md").read_text(encoding="utf-8")
    # The README, then the whole CHANGELOG: an index shows what changed without the repository.
    assert description.startswith(readme.splitlines()[0])
    assert changelog.strip() in description
    assert description.index(readme.strip().splitlines()[-1]) < description.index("# Changelog")
    assert relative_links(description) == []

"""Every install instruction works while nia is not on the package index (issue 27.1).

``pip install nia-context`` (or an extra of it) fails on a fresh machine: no
instruction in the docs, the plugin template or nia's own messages may send a
user there. Installing from a checkout, a wheel, a URL (``nia-context @ …``) or
the extra's own packages is fine; the README's two commands themselves run in CI.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FROM_THE_INDEX = re.compile(r"pip install[^\n]*?(?<![\w@/.-])nia-context(?!\s*@)(?:\[[\w,]+\])?(?=[\s'\"`]|$)")


def _texts() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found += sorted(p for p in (ROOT / "plugin-template").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    found += sorted((ROOT / "nia_core").rglob("*.py"))
    return found


def test_no_instruction_installs_nia_from_the_package_index():
    offenders = []
    for path in _texts():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if FROM_THE_INDEX.search(line) and "${NIA_SOURCE:-nia-context}" not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_pattern_catches_what_would_fail():
    assert FROM_THE_INDEX.search("pip install 'nia-context[mcp]'")
    assert FROM_THE_INDEX.search("pip install nia-context")
    assert not FROM_THE_INDEX.search("pip install 'nia-context @ git+https://example.org/nia'")
    assert not FROM_THE_INDEX.search("pip install '.[mcp]'")
    assert not FROM_THE_INDEX.search("pip uninstall nia-context")

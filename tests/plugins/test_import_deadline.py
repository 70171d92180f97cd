"""#11.4 for installed plugins: an entry point whose import never finishes is broken, the rest goes on."""

from __future__ import annotations

import os
import subprocess
import sys

GOOD = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource("installed/a", lambda: 1, lambda v: "Installed plugin works")]
"""


def test_an_entry_point_stuck_at_import_is_reported_and_the_others_load(site, tmp_path):
    site.plugin("stuck-ep", "import time\ntime.sleep(10**6)\n")
    site.plugin("good-ep", GOOD)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env.update(NIA_IMPORT_TIMEOUT="1", NIA_NO_CACHE="1")
    for args in (["context", "show"], ["--strict", "context", "show"], ["--help"]):
        result = subprocess.run(
            [sys.executable, "-c", "from nia_core.cli import main; main()", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if args[0] == "--strict":
            assert result.returncode == 1
            assert result.stderr.strip() == "Error: plugin 'stuck-ep': import did not finish in 1 s"
        elif args[0] == "--help":
            assert result.returncode == 0 and "context" in result.stdout
        else:
            assert result.returncode == 0, result.stderr
            assert "Installed plugin works" in result.stdout
            assert "Warning: plugin 'stuck-ep': import did not finish in 1 s" in result.stderr

"""The commented ``.nia/project.toml`` and ``.nia/commands.toml`` that ``nia init`` writes for a folder.

Each file is valid as written and changes nothing nia would do without it,
except what it fills in from the folder: the project's name, and a README as
project context when there is one. Everything else is a commented example of
a key, with a pointer to the docs, so a new user sees what can be set.
"""

from __future__ import annotations

import json
from pathlib import Path

from nia_core.files import create_inside

READMES = ("README.md", "README.rst", "README.txt", "README")


def project_toml(root: Path) -> str:
    """The starter ``project.toml`` for the project at ``root``."""
    readme = next((name for name in READMES if (root / name).is_file()), None)
    context = (
        "[[project.context]]             # every session and workflow gets this file (docs/project.md)\n"
        'type = "file"\n'
        f"path = {json.dumps(readme)}\n"
        'description = "What the project is"\n'
        if readme
        else "# [[project.context]]           # a file every session and workflow gets (docs/project.md)\n"
        '# type = "file"                 # or "directory": its files, at most 100\n'
        '# path = "README.md"\n'
        '# description = "What the project is"\n'
    )
    return (
        "# nia's settings for this project: docs/project.md. Every key is optional;\n"
        "# nia validates them and names the file, line and key of a mistake.\n"
        "\n"
        "[project]\n"
        f"name = {json.dumps(root.name)}\n"
        '# description = "One line about the project, for the model"\n'
        '# role_prompt = "You are a careful engineer on this project."   # workflows\' role\n'
        '# prompt_format = "md"          # or "xml": how the project context is rendered\n'
        "\n"
        f"{context}"
        "\n"
        "# [session]                     # nia session new's model (else NIA_MODEL, else echo/echo)\n"
        '# model = "anthropic-messages/claude-sonnet-4-5"\n'
        "\n"
        "# [plugins]\n"
        '# disabled = ["nia-git"]        # plugins switched off here (nia plugins disable NAME writes this)\n'
        "\n"
        "# [plugins.nia-git]             # a plugin's own settings: docs/plugins.md\n"
        "# paths = 10\n"
        "\n"
        "# [providers.anthropic-messages] # docs/providers.md: base_url, api_key_env, timeout, prices...\n"
        '# api_key_env = "ANTHROPIC_API_KEY"\n'
        "\n"
        "# [logs]\n"
        "# keep_transactions = 50        # workflow transaction logs kept in .nia/logs/transactions\n"
    )


COMMANDS_TOML = (
    "# Workflows: `nia TARGET OPERATION` assembles a prompt from the project's context\n"
    '# and the operation\'s own, and runs it (docs/project.md, "Workflows"). Uncomment\n'
    '# this one to get `nia issue draft "Login is slow"`; `nia workflows list` lists them.\n'
    "\n"
    "# [[workflows]]\n"
    '# target = "issue"\n'
    '# description = "Work with issues"\n'
    '# role_prompt = "You write clear, actionable GitHub issues."\n'
    "#\n"
    "# [[workflows.operations]]\n"
    '# name = "draft"\n'
    '# task_prompt = "Draft an issue from the notes below: a title, the problem, how to reproduce it."\n'
    "# user_input = true             # the notes: arguments, or stdin\n"
    "#\n"
    "# [[workflows.operations.context]]   # files this operation also gets\n"
    '# type = "directory"\n'
    '# path = "docs"\n'
)


def init(root: Path) -> list[tuple[str, bool]]:
    """Write the starter files into ``root/.nia``; ``(name, written)`` for each (an existing one is kept)."""
    written = []
    for name, text in (("project.toml", project_toml(root)), ("commands.toml", COMMANDS_TOML)):
        written.append((name, create_inside(root, root / ".nia" / name, text.encode("utf-8"))))
    return written

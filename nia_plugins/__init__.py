"""nia's built-in plugins. They use only ``nia_core``'s public API, like any third-party plugin.

Listed in declaration order, which is the order their sources appear in a baseline.
"""

BUILTINS: dict[str, str] = {
    "nia-environment": "nia_plugins.environment",
    "nia-date": "nia_plugins.date",
    "nia-instructions": "nia_plugins.instructions",
    "nia-project": "nia_plugins.project",
    "nia-git": "nia_plugins.git",
}

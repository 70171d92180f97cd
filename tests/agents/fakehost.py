"""A host that does not exist, written as a new command-hook host is: one module of facts.

Shaped like GitHub Copilot CLI's command hooks (docs/hosts-more in the design
notes): a flat list of handlers under a camelCase event, ``bash`` and
``timeoutSec`` keys, a ``version`` the file must hold, a top-level
``additionalContext`` answer. tests/agents/test_install.py adds it to the host
table and drives every command through it.
"""

from __future__ import annotations

from nia_core.agents.contract import PROMPT, START, HookFormat, HostAdapter, SettingsPlaces, utf8_bytes

ADAPTER = HostAdapter(
    name="fakehost",
    title="Fake Host",
    output_limit=50_000,
    measure=utf8_bytes,
    unit="bytes",
    native=(),
    host_version=lambda path: None,
    settings=SettingsPlaces(
        project=(".fakehost", "hooks", "nia.json"),
        user_folder=("FAKEHOST_HOME", ".fakehost"),
        user=("hooks", "nia.json"),
    ),
    events={"sessionStart": START, "userPromptSubmitted": PROMPT},
    output="additionalContext",
    format=HookFormat(nested=False, command_key="bash", timeout_key="timeoutSec", top={"version": 1}),
    notes=("Fake Host runs project hooks only in a trusted folder.",),
)

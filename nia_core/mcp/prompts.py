"""Workflows from ``.nia/commands.toml`` as MCP prompts, assembled exactly as ``--print-prompt`` assembles them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nia_core.context import LOADER_TIMEOUT, Location, SystemContext, initialize
from nia_core.errors import UsageError
from nia_core.mcp.limits import quoted
from nia_core.project.commands_config import load_commands_config
from nia_core.project.workflow import assemble_workflow


@dataclass(frozen=True)
class WorkflowPrompt:
    target: str
    operation: str
    description: str
    takes_input: bool

    @property
    def name(self) -> str:
        """``TARGET OPERATION``, as the workflow is run: ``nia TARGET OPERATION``."""
        return f"{self.target} {self.operation}"

    @property
    def input_help(self) -> str:
        return f"The user input of `nia {self.name}` (what it takes as arguments or on stdin)."


class Prompts:
    """Reads commands.toml at every call: a workflow edited while serving is served as edited."""

    def __init__(
        self, location: Location, context: Callable[[], SystemContext], timeout: float = LOADER_TIMEOUT
    ) -> None:
        self.location = location
        self.context = context
        self.timeout = timeout

    def workflows(self) -> list[WorkflowPrompt]:
        """Every workflow; a commands.toml that does not validate raises its one-line ConfigError."""
        commands = load_commands_config(self.location.root)
        return [
            WorkflowPrompt(target.name, op.name, op.description or target.description, op.user_input)
            for target in commands.targets
            for op in target.operations
        ]

    def _find(self, target: str, operation: str) -> None:
        """Refuse an unknown workflow quoting only the start of what the client sent (it may be megabytes)."""
        workflows = self.workflows()
        if not workflows:
            return  # the workflow's own error says why there are none
        operations = [w.operation for w in workflows if w.target == target]
        if not operations:
            known = ", ".join(dict.fromkeys(w.target for w in workflows)) or "none"
            raise UsageError(f"unknown workflow target {quoted(target)} (defined: {known})")
        if operation not in operations:
            raise UsageError(
                f"unknown operation {quoted(operation)} for target {quoted(target)} (defined: {', '.join(operations)})"
            )

    def render(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
        """Workflow ``name``'s prompt, byte for byte what ``--print-prompt`` prints, and its description."""
        target, _, operation = name.strip().partition(" ")
        if not operation:
            raise UsageError(f"unknown prompt {quoted(name)}: prompts are named 'TARGET OPERATION'")
        unknown = sorted(set(arguments) - {"input"})
        if unknown:
            raise UsageError(f"prompt {quoted(name)} takes no argument {quoted(unknown[0])} (only 'input')")
        user_input = arguments.get("input")
        if user_input is not None and not isinstance(user_input, str):
            raise UsageError(f"prompt {quoted(name)}: 'input' must be text")
        operation = operation.strip()
        self._find(target, operation)
        workflow = assemble_workflow(self.location, target, operation, user_input=user_input)
        generation = initialize(workflow.compose(self.context()), timeout=self.timeout)
        return generation.baseline, workflow.operation.description or workflow.target.description

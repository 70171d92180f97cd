"""``nia workflows list`` and one command per workflow: ``nia TARGET OPERATION``.

Targets and operations come from ``.nia/commands.toml``; each target is a
dynamic command group, so ``nia issue draft`` exists exactly when the project
defines it. A built-in command of the same name wins.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click

from nia_core.cli.app import App
from nia_core.cli.group import NiaGroup
from nia_core.cli.textin import check_text, read_stdin, stdin_is_terminal
from nia_core.context import Generation, Location, initialize
from nia_core.errors import InitializationBlocked, NiaError, UsageError
from nia_core.project import translog
from nia_core.project.commands_config import COMMANDS_FILE, CommandsConfig, Operation, Target, load_commands_config
from nia_core.project.config import load_project_config
from nia_core.project.toml import ConfigError, read_toml
from nia_core.project.workflow import Workflow, assemble_workflow
from nia_core.providers.names import canonical_model


@click.group("workflows")
def workflows() -> None:
    """The workflows defined in .nia/commands.toml."""


def _flags(operation: Operation) -> list[str]:
    flags = []
    if operation.user_input:
        flags.append("takes input")
    if operation.commit:
        flags.append("commit conventions")
    return flags


@workflows.command("list")
@click.option("--json", "as_json", is_flag=True, help="Targets and operations as JSON.")
@click.pass_context
def list_workflows(ctx: click.Context, as_json: bool) -> None:
    """List every target and operation, each runnable as `nia TARGET OPERATION`."""
    location = App.of(ctx).locate()
    commands = load_commands_config(location.root)
    attached = getattr(ctx.find_root().command, "commands", {})  # the `nia` group's
    builtin = set(attached) | set(NiaGroup.lazy_commands)  # built-ins not imported yet win too
    if as_json:
        data = [
            {
                "target": t.name,
                "description": t.description,
                "hidden_by_builtin": t.name in builtin,
                "operations": [
                    {"name": o.name, "description": o.description, "user_input": o.user_input, "commit": o.commit}
                    for o in t.operations
                ],
            }
            for t in commands.targets
        ]
        click.echo(json.dumps({"root": str(location.root), "workflows": data}, indent=2))
        return
    if not commands.exists:
        click.echo(f"No workflows: {location.root / '.nia' / 'commands.toml'} does not exist.")
        return
    if not commands.targets:
        click.echo("No workflows are defined in .nia/commands.toml.")
        return
    for target in commands.targets:
        hidden = f"  (hidden by the built-in command 'nia {target.name}')" if target.name in builtin else ""
        click.echo(f"{target.name}: {target.description}{hidden}" if target.description else f"{target.name}{hidden}")
        width = max((len(o.name) for o in target.operations), default=0)
        for op in target.operations:
            flags = _flags(op)
            extra = f" [{', '.join(flags)}]" if flags else ""
            click.echo(f"  nia {target.name} {op.name.ljust(width)}  {op.description}{extra}".rstrip())
        if not target.operations:
            click.echo("  (no operations)")


def _read_input(operation: Operation, words: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The user input and where it came from: the argument, else stdin when it is not a terminal."""
    if not operation.user_input:
        return None, None
    if words:
        return check_text(" ".join(words), "the input argument"), "argument"
    if stdin_is_terminal():
        return None, None
    return read_stdin("the input on stdin"), "stdin"


def _command_line(target: str, operation: str, params: dict[str, Any], input_source: str | None) -> str:
    words = ["nia", target, operation]
    for path in params["context_files"]:
        words += ["--context-file", path]
    for path in params["context_dirs"]:
        words += ["--context-dir", path]
    if params["prompt_format"]:
        words += ["--format", params["prompt_format"]]
    if params["print_prompt"]:
        words.append("--print-prompt")
    line = shlex.join(words)
    return line + " <input>" if input_source == "argument" else line


def _report(workflow: Workflow, verbose: bool, log_path: str | None) -> None:
    for warning in workflow.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if not verbose:
        return
    for category, merged in (("project context", workflow.category1.merged), ("task context", workflow.category2)):
        for file in merged.files:
            click.echo(f"Included: {file.path} ({category}, {file.size} bytes, from {file.origin})", err=True)
        for skip in merged.skipped:
            click.echo(skip.note(), err=True)
    if log_path:
        click.echo(f"Transaction log: {log_path}", err=True)


def _write_log(location: Location, entry: dict[str, Any]) -> str | None:
    keep = load_project_config(location.root).keep_transactions
    path = translog.write(location.root, entry, keep=keep)  # None: refused or failed, with a warning
    return str(path.relative_to(location.root)) if path is not None else None


def run_workflow(ctx: click.Context, target: Target, operation: Operation, **params: Any) -> None:
    app = App.of(ctx)
    location = app.locate()
    user_input, input_source = _read_input(operation, params.pop("user_input", ()))
    command = _command_line(target.name, operation.name, params, input_source)
    try:
        workflow = assemble_workflow(
            location,
            target.name,
            operation.name,
            context_files=params["context_files"],
            context_dirs=params["context_dirs"],
            user_input=user_input,
            prompt_format=params["prompt_format"],
        )
    except NiaError as exc:
        if location.has_project_dir:
            _write_log(location, translog.failure(command, target.name, operation.name, location, str(exc)))
        raise
    host, view = app.open(location.path)
    generation: Generation | None = None
    blocked: str | None = None
    try:
        composed = workflow.compose(host.assemble(view).context)
        generation = initialize(composed, timeout=host.timeout)
    except InitializationBlocked as exc:
        if params["print_prompt"]:
            _write_log(location, translog.record(workflow, command=command, status="error", error=str(exc)))
            raise
        # A run goes on: the session keeps the input pending (a new one), or its admitted values (--session).
        blocked = str(exc)
    except NiaError as exc:
        _write_log(location, translog.record(workflow, command=command, status="error", error=str(exc)))
        raise
    status = "printed" if params["print_prompt"] else "blocked" if blocked else "assembled"
    entry = translog.record(
        workflow, command=command, status=status, generation=generation, input_source=input_source, error=blocked
    )
    log_path = _write_log(location, entry)
    _report(workflow, params["verbose"], log_path)
    if params["print_prompt"]:
        assert generation is not None
        click.echo(generation.baseline)
        return
    run_session(app, workflow, params["model"], params["session"])


START_MESSAGE = "Carry out the task described in the system context."
"""The first user turn of a workflow session: the task and its input are already in the baseline."""


def run_session(app: App, workflow: Workflow, model: str | None, session_prefix: str | None) -> None:
    """Send one turn of a workflow session: a new one, or ``--session ID`` to continue.

    Every boundary composes the workflow's sections in front of the plugins'
    sources, so the baseline is exactly what ``--print-prompt`` shows.
    """
    from nia_core.cli.session import opened
    from nia_core.cli.turn import send_turn

    where = str(workflow.location.path)
    providers = app.runtime.providers(where)
    with opened(click.get_current_context(), session_prefix) as (store, session_id):
        if session_id:
            record = store.session(session_id)
            if record.location != where:
                raise UsageError(
                    f"session {session_id} is at {record.location}, not here ({where}); "
                    "run the workflow from there, or move the session"
                )
            text = workflow.user_input or "Continue."
        else:
            model = canonical_model(model) if model else app.runtime.default_model(where)
            providers.check(model)
            for warning in app.runtime.model_warnings(providers, model):
                click.echo(f"Warning: {warning}", err=True)
            session_id = app.runtime.create_session(store, workflow.location, model).id
            text = START_MESSAGE
        click.echo(f"session {session_id}", err=True)
        retry = f"nia {workflow.name} --session {session_id}"
        send_turn(app, store, session_id, text, retry=retry, workflow=workflow, providers=providers)
        click.echo(f"Continue with: nia {workflow.name} --session {session_id[:12]} ...", err=True)


def _operation_command(target: Target, operation: Operation) -> click.Command:
    params: list[click.Parameter] = [
        click.Option(
            ["--context-file", "context_files"],
            multiple=True,
            metavar="FILE",
            help="Add a file to the task context (repeatable; relative to the working directory).",
        ),
        click.Option(
            ["--context-dir", "context_dirs"],
            multiple=True,
            metavar="DIR",
            help="Add a folder's files to the task context (repeatable; relative to the working directory).",
        ),
        click.Option(["--print-prompt"], is_flag=True, help="Print the assembled prompt and run nothing."),
        click.Option(
            ["--format", "prompt_format"],
            type=click.Choice(["md", "xml"]),
            default=None,
            help="Render the prompt as Markdown or XML (default: [project] prompt_format, else md).",
        ),
        click.Option(["--verbose", "-v"], is_flag=True, help="Show every file included or skipped, and why."),
        click.Option(
            ["--model"],
            default=None,
            help="PROVIDER/MODEL for a new session (default: NIA_MODEL, else [session] model, else echo/echo).",
        ),
        click.Option(["--session"], metavar="ID", default=None, help="Continue this workflow session."),
    ]
    if operation.user_input:
        params.append(click.Argument(["user_input"], nargs=-1))

    def callback(**values: Any) -> None:
        run_workflow(click.get_current_context(), target, operation, **values)

    description = operation.description or f"Run the {target.name} {operation.name} workflow."
    usage = "\n\nThe user input comes from the arguments, else from stdin." if operation.user_input else ""
    return click.Command(operation.name, callback=callback, params=params, help=description + usage)


def _target_group(target: Target) -> click.Group:
    group = click.Group(target.name, help=target.description or f"The {target.name} workflows.")
    for operation in target.operations:
        group.add_command(_operation_command(target, operation))
    return group


def _broken(name: str, error: ConfigError) -> click.Command:
    """A stand-in for target ``name`` while commands.toml is invalid: running it reports why."""

    def callback(**_: Any) -> None:
        raise error

    return click.Command(
        name,
        callback=callback,
        help=f"(unavailable: {error})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    )


def _target_names(root: Path) -> list[str]:
    """Target names from a commands.toml that parses but does not validate."""
    try:
        data = read_toml(root / ".nia" / COMMANDS_FILE, root=root)  # checked: no symlink out, no deep nesting
    except ConfigError:
        return []
    workflows = data.get("workflows")
    if not isinstance(workflows, list):
        return []
    return [w["target"] for w in workflows if isinstance(w, dict) and isinstance(w.get("target"), str)]


def workflow_commands(ctx: click.Context) -> dict[str, click.Command]:
    """One command group per target in ``.nia/commands.toml``.

    When the file is invalid, each target it names still resolves, to a
    command that reports the error: ``nia code create`` then says what is
    wrong and where, not "no such command".
    """
    root = App.of(ctx).locate().root
    try:
        commands: CommandsConfig = load_commands_config(root)
    except ConfigError as error:
        names = _target_names(root)
        if not names:
            raise
        return {name: _broken(name, error) for name in names}
    return {target.name: _target_group(target) for target in commands.targets}

"""The ``nia`` click group: error reporting without tracebacks, and commands from plugins."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

import click

from nia_core.cli.app import App
from nia_core.errors import NiaError
from nia_core.stdio import protect

DynamicCommands = Callable[[click.Context], dict[str, click.Command]]


class ReportedError(click.ClickException):
    """A :class:`NiaError` on its way out of click, keeping its exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        vars(self)["exit_code"] = exit_code  # click declares exit_code a ClassVar; this instance's differs


class NiaGroup(click.Group):
    """Resolves commands from plugins (and other dynamic providers) on demand."""

    dynamic_providers: list[DynamicCommands] = []
    lazy_commands: dict[str, tuple[str, str]] = {}
    """Built-in command name -> (``module:attribute`` of the command, short help for ``--help``)."""

    def _dynamic(self, ctx: click.Context) -> dict[str, click.Command]:
        cache = ctx.meta.setdefault("nia.dynamic", None)
        if cache is None:
            cache = {}
            for provider in self.dynamic_providers:
                try:
                    cache.update(provider(ctx))
                except NiaError as exc:
                    logging.getLogger("nia.cli").warning("%s", exc)
            ctx.meta["nia.dynamic"] = cache
        return cache  # type: ignore[no-any-return]

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(self.lazy_commands)
        names.update(self._dynamic(ctx))
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.lazy_commands:
            module, _, attribute = self.lazy_commands[cmd_name][0].partition(":")
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        if command is not None:
            return command
        return self._dynamic(ctx).get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Suggest from every command, not only those imported so far: ``nia contxt`` → did you mean 'context'?"""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Like click's, but built-in commands are described without importing them."""
        rows = []
        limit = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        for name in self.list_commands(ctx):
            if name not in self.commands and name in self.lazy_commands:
                rows.append((name, self.lazy_commands[name][1]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Every invocation (console script or test runner) keeps plugins' prints off stdout."""
        with protect():
            return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NiaError as exc:
            if App.of(ctx).debug:
                raise
            raise ReportedError(str(exc), exc.exit_code) from None
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            raise  # stdout closed early (`nia ... | head`): click exits 1 quietly
        except Exception as exc:
            if App.of(ctx).debug:
                raise
            raise ReportedError(
                f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)", 1
            ) from None

"""The ``nia`` click group: error reporting without tracebacks, and commands from plugins."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from nia_core.cli.app import App
from nia_core.errors import NiaError, message_of
from nia_core.stdio import protect

DynamicCommands = Callable[[click.Context], dict[str, click.Command]]
LISTING = "nia.listing"
"""``ctx.meta`` key set while ``nia --help`` lists commands (not while one is resolved to run)."""
HELP_WANTED = "nia.help"
"""``ctx.meta`` key: ``--help`` was given; the help is shown once every option is parsed."""


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
            import logging

            from nia_core.cli.logs import configure_logging

            # Dynamic commands resolve before the group callback runs; their warnings must show too.
            configure_logging(App.of(ctx).debug)
            cache = {}
            said = set()
            for provider in self.dynamic_providers:
                try:
                    cache.update(provider(ctx))
                except NiaError as exc:
                    if str(exc) not in said:  # one cause (a broken config, a deleted folder) fails every provider
                        said.add(str(exc))
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
        """Like click's, but built-in commands are described without importing them, and the rows of
        plugin commands and workflow targets come from :mod:`nia_core.cli.helpcache` while still true."""
        static = set(super().list_commands(ctx)) | set(self.lazy_commands)
        entries = self._help_entries(ctx, static, formatter.width)
        names = sorted(static | set(entries))
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)
        rows = []
        for name in names:
            if name not in self.commands and name in self.lazy_commands:
                rows.append((name, self.lazy_commands[name][1]))
            elif name in self.commands:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(limit)))
            elif not entries[name]["hidden"]:
                rows.append((name, entries[name]["text"]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _help_entries(self, ctx: click.Context, static: set[str], width: int) -> dict[str, dict[str, Any]]:
        """Dynamic command name -> help entry (``text`` at this width): cached, or listed (and cached)."""
        from nia_core.cli import helpcache

        if not self.dynamic_providers:
            return {}
        app = App.of(ctx)
        fresh = ctx.meta.get("nia.dynamic") is None
        cached = helpcache.read(app) if fresh else None
        if cached is not None:
            names = static | {item["name"] for item in cached}
            limit = width - 6 - max((len(n) for n in names), default=0)
            entries = {}
            for item in cached:
                text = helpcache.short_help(item, limit)
                if text is None:  # a plugin's own command class, listed at another width: ask it again
                    break
                entries[item["name"]] = {**item, "text": text}
            else:
                return entries
        from nia_core.cli.logs import WarningCounter

        before = set(sys.modules)
        started = helpcache.now()
        ctx.meta[LISTING] = True
        with WarningCounter() as warnings:
            dynamic = self._dynamic(ctx)
        names = static | set(dynamic)
        limit = width - 6 - max((len(n) for n in names), default=0)
        entries = {name: helpcache.entry(name, command, limit) for name, command in dynamic.items()}
        if fresh and helpcache.usable(app) and not warnings.count and app.clean():
            plugins = tuple(app.plugin_modules())
            imported = (set(sys.modules) - before) | {
                m for m in sys.modules if m.startswith(tuple(p + "." for p in plugins)) or m in plugins
            }
            helpcache.write(app, list(entries.values()), imported, started)
        return entries

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        """``--help`` that waits for the other global options: what it lists depends on ``-p``, ``--plugins-dir``.

        Click runs an eager ``--help`` before the options after it are parsed
        (``nia --help -p no:acme``); this one only notes the request, and
        :meth:`parse_args` shows the help once every option has its value.
        """
        names = self.get_help_option_names(ctx)
        if not names or not self.add_help_option:
            return None
        option = vars(self).get("nia_help_option")
        if option is None:  # one object per command: click orders parameters by identity
            option = click.Option(
                names,
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=_note_help,
                help="Show this message and exit.",
            )
            vars(self)["nia_help_option"] = option
        return option

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        if ctx.meta.pop(HELP_WANTED, False):
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit()
        return rest

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
            if isinstance(exc, OSError) and not _cwd_exists():
                from nia_core.project.root import GONE

                raise ReportedError(GONE, 2) from None
            raise ReportedError(
                f"unexpected {type(exc).__name__}: {message_of(exc)} (run with --debug for the traceback)", 1
            ) from None


def _note_help(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        ctx.meta[HELP_WANTED] = True


def _cwd_exists() -> bool:
    """Whether the working directory still exists: a command that failed on a deleted one says that, not errno."""
    try:
        os.getcwd()
    except OSError:
        return False
    return True

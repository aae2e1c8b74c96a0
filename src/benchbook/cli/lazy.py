"""Click groups whose commands are made on first use, so ``benchbook --help`` and a command
import only what they need (issue 14, item 15: start-up time).

A :class:`LazyGroup` holds, besides ordinary commands, *loaders*: a name, a function making
the command, and the one-line help its group's ``--help`` lists (so listing the group makes
nothing). ``group.commands`` stays a mapping of name → command: looking a name up makes that
command; ``items()``/``values()`` make them all; iterating, ``len`` and ``in`` make nothing.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import click

Loader = Callable[[], click.Command]


class LazyCommands(dict[str, click.Command]):
    """A group's commands, each made by its loader on first lookup (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.loaders: dict[str, Loader] = {}

    def add_loader(self, name: str, loader: Loader) -> None:
        """Make ``name`` by calling ``loader`` on first lookup (replaces a command of that name)."""
        dict.pop(self, name, None)
        self.loaders[name] = loader

    def _load(self, name: object) -> None:
        if not isinstance(name, str):
            return
        loader = self.loaders.pop(name, None)
        if loader is not None:
            dict.__setitem__(self, name, loader())

    def _load_all(self) -> None:
        for name in list(self.loaders):
            self._load(name)

    def __getitem__(self, name: str) -> click.Command:
        self._load(name)
        return dict.__getitem__(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        self._load(name)
        return dict.get(self, name, default)

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.loaders.pop(name, None)
        dict.__setitem__(self, name, command)

    def __contains__(self, name: object) -> bool:
        return name in self.loaders or dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter([*dict.keys(self), *self.loaders])

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.loaders)

    def keys(self) -> list[str]:  # type: ignore[override]
        return list(self)

    def items(self) -> list[tuple[str, click.Command]]:  # type: ignore[override]
        self._load_all()
        return list(dict.items(self))

    def values(self) -> list[click.Command]:  # type: ignore[override]
        self._load_all()
        return list(dict.values(self))

    def pop(self, name: str, *default: Any) -> Any:
        self._load(name)
        return dict.pop(self, name, *default)


class LazyGroup(click.Group):
    """A click group whose commands may be added as loaders (:meth:`add_lazy`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lazy = LazyCommands()
        for name, command in self.commands.items():
            lazy[name] = command
        self.commands = lazy
        self.listed_help: dict[str, str] = {}

    def add_lazy(self, name: str, loader: Loader, short_help: str) -> None:
        """Add command ``name``, made by ``loader`` when first used; ``short_help`` is what this
        group's ``--help`` lists for it (and becomes the command's ``short_help``)."""
        def load() -> click.Command:
            command = loader()
            command.short_help = short_help
            return command

        assert isinstance(self.commands, LazyCommands)
        self.commands.add_loader(name, load)
        self.listed_help[name] = short_help

    def add_import(self, name: str, target: str, short_help: str) -> None:
        """:meth:`add_lazy` for a command object named by ``"package.module:attribute"``."""
        module, _, attribute = target.partition(":")

        def load() -> click.Command:
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{target} is a {type(command).__name__}, not a click command")
            return command

        self.add_lazy(name, load, short_help)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Like click's, but a command not made yet is listed with its loader's help."""
        assert isinstance(self.commands, LazyCommands)
        rows: list[tuple[str, str | None]] = []
        for name in self.list_commands(ctx):
            if name in self.commands.loaders:
                rows.append((name, self.listed_help.get(name, "")))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, None))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        lines = []
        for name, listed in rows:
            if listed is None:
                command = self.get_command(ctx, name)
                assert command is not None
                listed = command.get_short_help_str(limit)
            lines.append((name, listed))
        with formatter.section("Commands"):
            formatter.write_dl(lines)

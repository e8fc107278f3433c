"""The command registry of the ``zkwire`` shell, and how a command line becomes a command's typed arguments.

A command is an async handler and a frozen, keyword-only dataclass of its arguments; :func:`command`
registers both in :data:`COMMANDS`::

    @dataclass(frozen=True, kw_only=True)
    class GetArguments:
        path: str = positional(znode_path)
        stat: bool = flag("s")
        watch: bool = flag("w")

    @command("get", "get [-s] [-w] path", "show a node's data", GetArguments)
    async def get(ctx: Context, args: GetArguments) -> None: ...

Every field is declared with :func:`positional`, :func:`optional_positional`, :func:`flag` or
:func:`option`; each converter turns the text of its argument into the field's type (mypy checks that
the converter's result fits the field, and that the handler takes the command's dataclass).  A
converter or the dataclass's ``__post_init__`` refuses a value by raising
:class:`~zkwire.shell.outcomes.ArgumentError`; its message is prefixed with the command's name.

The words of a command line (:meth:`Command.parse`):

* options may come before or after the positional arguments (``removewatches /x -a``), flags may be
  combined (``-sw``) and an option's value may be attached (``-v3``) or the next word (``-v 3``);
* a flag may also have a long name (``flag("j", long="json")``), given as ``--json``;
* an option may also be a word (``option("add", ...)``, given as ``-add VALUE``, as ZooKeeper's shell
  spells ``reconfig``'s): the whole word after the dash names it, never combined with others, and its
  value is always the next word;
* ``--`` ends the options, and a word that looks like a negative number (``-5``) is positional;
* every word must be valid UTF-8 text; one that is not is refused by position, never repeated (it may be
  a credential).

Everything is checked before a connection is made: a wrong command line is a
:class:`~zkwire.shell.outcomes.UsageError` (exit 2).  The commands themselves are defined in
:mod:`zkwire.shell.commands`, whose import registers them.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from .outcomes import ArgumentError, UsageError
from .runtime import is_utf8

if TYPE_CHECKING:
    from .context import Context

__all__ = [
    "COMMANDS",
    "ALIASES",
    "Command",
    "Handler",
    "Invocation",
    "NoArguments",
    "command",
    "flag",
    "lookup",
    "option",
    "optional_positional",
    "positional",
    "prepare",
    "split_line",
]

T = TypeVar("T")
A = TypeVar("A")

#: What a command runs: the context and its parsed arguments; ``None`` is exit code 0.
Handler = Callable[["Context", A], Awaitable[int | None]]

_DECLARATION = "zkwire.shell.argument"


@dataclass(frozen=True)
class _Declaration:
    """How a dataclass field is given on the command line."""

    kind: str  # "positional", "flag" or "option"
    letter: str = ""
    convert: Callable[[str], object] = str
    long: str = ""


def positional(convert: Callable[[str], T]) -> T:
    """A positional argument that must be given; ``convert`` makes its value from the word."""
    required: T = dataclasses.field(metadata={_DECLARATION: _Declaration("positional", convert=convert)})
    return required


def optional_positional(convert: Callable[[str], T]) -> T | None:
    """A positional argument that may be left out (then ``None``); all of them follow the required ones."""
    return dataclasses.field(default=None, metadata={_DECLARATION: _Declaration("positional", convert=convert)})


def flag(letter: str, *, long: str = "") -> bool:
    """``-letter`` (or ``--long``, when it has a long name): ``True`` when given."""
    return dataclasses.field(default=False, metadata={_DECLARATION: _Declaration("flag", letter, long=long)})


@overload
def option(letter: str, convert: Callable[[str], T]) -> T | None: ...


@overload
def option(letter: str, convert: Callable[[str], T], *, default: T) -> T: ...


def option(letter: str, convert: Callable[[str], T], *, default: T | None = None) -> T | None:
    """``-letter VALUE`` (or ``-letterVALUE``): ``convert`` makes the value; ``default`` when not given.

    ``letter`` may be a word of ASCII letters (``"add"``): the option is then ``-add VALUE`` only."""
    return dataclasses.field(default=default, metadata={_DECLARATION: _Declaration("option", letter, convert)})


@dataclass(frozen=True, kw_only=True)
class NoArguments:
    """The arguments of a command that takes none."""


@dataclass(frozen=True)
class _Syntax:
    """The command-line form of an arguments dataclass, read from its field declarations."""

    positionals: tuple[tuple[str, Callable[[str], object]], ...]
    required: int
    flags: dict[str, str]
    options: dict[str, tuple[str, Callable[[str], object]]]
    #: The flags' long names (``json``) and their letters.
    long_flags: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def words(self) -> frozenset[str]:
        """The options named by a word (``-add``) rather than a letter."""
        return frozenset(name for name in self.options if len(name) > 1)

    @classmethod
    def of(cls, arguments: type[object]) -> _Syntax:
        if not dataclasses.is_dataclass(arguments):
            raise TypeError(f"{arguments.__name__} is not a dataclass")
        positionals: list[tuple[str, Callable[[str], object]]] = []
        required = 0
        flags: dict[str, str] = {}
        options: dict[str, tuple[str, Callable[[str], object]]] = {}
        long_flags: dict[str, str] = {}
        for f in dataclasses.fields(arguments):
            declared = f.metadata.get(_DECLARATION)
            if not isinstance(declared, _Declaration):
                raise TypeError(f"{arguments.__name__}.{f.name}: not declared with positional(), flag() or option()")
            if declared.kind == "positional":
                has_default = f.default is not dataclasses.MISSING
                if not has_default:
                    if required < len(positionals):
                        raise TypeError(f"{arguments.__name__}.{f.name}: a required positional after an optional one")
                    required += 1
                positionals.append((f.name, declared.convert))
                continue
            usable = len(declared.letter) == 1 or (
                declared.kind == "option" and declared.letter.isascii() and declared.letter.isalpha()
            )
            if not usable or declared.letter in flags or declared.letter in options:
                raise TypeError(f"{arguments.__name__}.{f.name}: option letter {declared.letter!r} unusable")
            if declared.kind == "flag":
                flags[declared.letter] = f.name
            else:
                options[declared.letter] = (f.name, declared.convert)
            if declared.long:
                if (
                    not (declared.long.isascii() and declared.long.replace("-", "").isalnum())
                    or declared.long in long_flags
                ):
                    raise TypeError(f"{arguments.__name__}.{f.name}: long name {declared.long!r} unusable")
                long_flags[declared.long] = declared.letter
        return cls(tuple(positionals), required, flags, options, long_flags)


@dataclass
class _Words:
    """A command's words sorted into flags given, option values and positionals (all still text)."""

    flags: set[str] = dataclasses.field(default_factory=set)
    values: dict[str, str] = dataclasses.field(default_factory=dict)
    positionals: list[str] = dataclasses.field(default_factory=list)

    def given(self, letter: str) -> bool:
        return letter in self.flags or letter in self.values


@dataclass(frozen=True)
class Command(Generic[A]):
    """A registered command: its name, help, arguments dataclass and handler."""

    name: str
    usage: str
    summary: str
    arguments: type[A]
    handler: Handler[A]
    #: Needs an open session (the shell refuses it while there is none).
    session: bool = True
    #: Only makes sense in the interactive shell (history, connect, ...).
    shell_only: bool = False
    #: Option letters of which at most one may be given (and, if ``require_one``, exactly one).
    exclusive: str = ""
    require_one: bool = False
    syntax: _Syntax = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        syntax = _Syntax.of(self.arguments)
        unknown = [x for x in self.exclusive if x not in syntax.flags and x not in syntax.options]
        if unknown:
            raise TypeError(f"{self.name}: exclusive letters {unknown} are not options of {self.arguments.__name__}")
        object.__setattr__(self, "syntax", syntax)

    def parse(self, words: Sequence[str]) -> A:
        """This command's arguments from the words after its name; raises :class:`UsageError`."""
        for n, word in enumerate(words, 1):
            if not is_utf8(word):
                raise UsageError(f"{self.name}: argument {n} is not valid UTF-8 text")
        given = self._sort(words)
        self._check_exclusive(given)
        syntax = self.syntax
        try:
            values: dict[str, object] = {}
            for (name, convert), word in zip(syntax.positionals, given.positionals, strict=False):
                values[name] = convert(word)
            for letter, name in syntax.flags.items():
                values[name] = letter in given.flags
            for letter, (name, convert) in syntax.options.items():
                if letter in given.values:
                    values[name] = convert(given.values[letter])
            build: Callable[..., A] = self.arguments
            return build(**values)
        except ArgumentError as e:
            raise UsageError(f"{self.name}: {e}") from None

    def bind(self, words: Sequence[str]) -> Invocation:
        """The command ready to run with the arguments parsed from ``words``."""
        arguments = self.parse(words)
        return Invocation(self, lambda ctx: self.handler(ctx, arguments))

    def _sort(self, words: Sequence[str]) -> _Words:
        syntax = self.syntax
        out = _Words()
        only_positional = False
        i = 0
        while i < len(words):
            word = words[i]
            i += 1
            if only_positional or len(word) < 2 or word[0] != "-" or word[1].isdigit():
                out.positionals.append(word)
                continue
            if word == "--":
                only_positional = True
                continue
            if word.startswith("--"):
                letter = syntax.long_flags.get(word[2:])
                if letter is not None:
                    out.flags.add(letter)
                    continue
                raise self._usage(f"unknown option {word} (zkwire's own options go before the command)")
            letters = word[1:]
            if letters in syntax.words:
                if i >= len(words):
                    raise self._usage(f"option {word} needs a value")
                out.values[letters] = words[i]
                i += 1
                continue
            if syntax.words and letters[0] not in syntax.flags and letters[0] not in syntax.options:
                raise self._usage(f"unknown option {word}")
            for j, letter in enumerate(letters):
                if letter in syntax.options:
                    value = letters[j + 1 :]
                    if not value:
                        if i >= len(words):
                            raise self._usage(f"option -{letter} needs a value")
                        value = words[i]
                        i += 1
                    out.values[letter] = value
                    break
                if letter in syntax.flags:
                    out.flags.add(letter)
                    continue
                raise self._usage(f"unknown option -{letter}")
        count = len(out.positionals)
        if count < syntax.required:
            raise self._usage("missing argument")
        if count > len(syntax.positionals):
            raise self._usage(f"unexpected argument {out.positionals[len(syntax.positionals)]!r}")
        return out

    def _check_exclusive(self, given: _Words) -> None:
        if not self.exclusive:
            return
        chosen = [x for x in self.exclusive if given.given(x)]
        listed = ", ".join(f"-{x}" for x in self.exclusive)
        if len(chosen) > 1:
            raise UsageError(f"{self.name}: use only one of {listed}")
        if self.require_one and not chosen:
            raise UsageError(f"{self.name}: one of {listed} is required")

    def _usage(self, message: str) -> UsageError:
        return UsageError(f"{self.name}: {message}; usage: {self.usage}")


@dataclass(frozen=True)
class Invocation:
    """A command with its arguments parsed, ready to run against a context."""

    command: Command[Any]
    run: Callable[[Context], Awaitable[int | None]]


#: Every command by name (filled by importing :mod:`zkwire.shell.commands`).
COMMANDS: dict[str, Command[Any]] = {}
#: Other names of commands.
ALIASES = {"exit": "quit", "?": "help"}


def command(
    name: str,
    usage: str,
    summary: str,
    arguments: type[A],
    *,
    session: bool = True,
    shell_only: bool = False,
    exclusive: str = "",
    require_one: bool = False,
) -> Callable[[Handler[A]], Handler[A]]:
    """Register the decorated handler as command ``name``, taking ``arguments``."""

    def register(handler: Handler[A]) -> Handler[A]:
        if name in COMMANDS:
            raise ValueError(f"command {name!r} is registered twice")
        COMMANDS[name] = Command(
            name,
            usage,
            summary,
            arguments,
            handler,
            session=session,
            shell_only=shell_only,
            exclusive=exclusive,
            require_one=require_one,
        )
        return handler

    return register


def lookup(name: str) -> Command[Any]:
    """The command called ``name`` (or an alias; any case, if that is unambiguous)."""
    found = COMMANDS.get(ALIASES.get(name, name))
    if found is None:
        matches = [c for c in COMMANDS.values() if c.name.lower() == name.lower()]
        if len(matches) == 1:
            return matches[0]
        raise UsageError(f"Command not found: {name} (try help)")
    return found


def prepare(words: Sequence[str], *, interactive: bool) -> Invocation:
    """Look up ``words[0]`` and parse the rest; raises :class:`UsageError` (also for a shell-only command
    outside the shell) or :class:`~zkwire.errors.InvalidInputError` (an invalid path, ACL, ...)."""
    found = lookup(words[0])
    invocation = found.bind(words[1:])
    if found.shell_only and not interactive:
        raise UsageError(f"{found.name}: only available in the interactive shell")
    return invocation


def split_line(line: str) -> list[str]:
    """Split a shell line into words (quotes group words: ``create /a "two words"``)."""
    try:
        return shlex.split(line, comments=False, posix=True)
    except ValueError as e:
        raise UsageError(f"cannot parse the line: {e}") from None

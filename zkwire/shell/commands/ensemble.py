"""Commands on the ensemble's membership: ``config`` (the configuration the servers keep in
``/zookeeper/config``) and ``reconfig`` (dynamic reconfiguration, ZooKeeper 3.5+).

The option names are those of ZooKeeper's own shell (``reconfig -add ... -remove ...``, ``-members``,
``-file``; ``-v`` takes the configuration's version in hexadecimal, as ``config`` prints it), and so are
the outputs.  A member line is ``server.N=host:quorumPort:electionPort[:role];[clientHost:]clientPort``
(``N=...`` is taken too); every line and id is checked before anything is sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import ConnectionLossError, EnsembleConfigError
from ...sansio.ensemble import EnsembleConfig, parse_member
from .. import format as fmt
from ..context import Context
from ..outcomes import ArgumentError, ConnectError
from ..registry import command, flag, option
from ..runtime import read_text_file

__all__ = ["ConfigArguments", "ReconfigArguments", "MEMBER_FILE_LIMIT"]

#: The largest ``reconfig -file`` read (a membership file is a few lines; this guards against a wrong path).
MEMBER_FILE_LIMIT = 1 << 20

_HEX_VERSION = re.compile(r"(?:0[xX])?[0-9a-fA-F]{1,16}")


# ------------------------------------------------------------------------------------------- config


@dataclass(frozen=True, kw_only=True)
class ConfigArguments:
    stat: bool = flag("s")
    client: bool = flag("c")
    watch: bool = flag("w")


@command(
    "config",
    "config [-c] [-w] [-s]",
    "show the ensemble's configuration (-c only its version and client host:port list, -w watch for"
    " changes, -s with the config node's stat)",
    ConfigArguments,
)
async def cmd_config(ctx: Context, a: ConfigArguments) -> None:
    client = ctx.require_client()
    if a.watch:
        config, w = await client.get_config(watch=True)
        ctx.watch(w)
    else:
        config = await client.get_config()
    ctx.print(config.client_connect_string() if a.client else config.text())
    if a.stat and config.stat is not None:
        ctx.print(fmt.format_stat(config.stat))


# ----------------------------------------------------------------------------------------- reconfig


def _member_line(text: str) -> str:
    """One member line, checked, as it is sent: ``server.N=<what was given>``."""
    text = text.strip()
    if not text:
        raise ArgumentError("an empty member line (two commas in a row, or one at an end?)")
    try:
        member = parse_member(text)
    except EnsembleConfigError as e:
        raise ArgumentError(str(e)) from None
    return f"server.{member.id}={text.partition('=')[2].strip()}"


def _member_list(text: str) -> tuple[str, ...]:
    """``-add`` / ``-members``: member lines separated by commas."""
    return tuple(_member_line(item) for item in text.split(","))


def _server_ids(text: str) -> tuple[int, ...]:
    """``-remove``: server ids separated by commas."""
    ids: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not (item.isascii() and item.isdigit() and len(item) <= 19) or int(item) >= 1 << 63:
            raise ArgumentError(f"-remove takes server ids separated by commas, not {item!r}")
        ids.append(int(item))
    return tuple(ids)


def _config_version(text: str) -> int:
    """``-v``: a configuration version in hexadecimal, as ``config`` prints it (``0x`` may lead)."""
    if not _HEX_VERSION.fullmatch(text) or int(text, 16) >= 1 << 63:
        raise ArgumentError(f"-v takes the configuration's version in hexadecimal (as config shows it), not {text!r}")
    return int(text, 16)


def _member_file(text: str) -> tuple[str, ...]:
    """``-file``: the ``server.N=`` lines of a membership file (a dynamic configuration file, or a copy of
    the config node).  Blank lines and ``#``/``!`` comments are skipped and a ``version=`` line is ignored
    (``-v`` makes the change conditional); any other line is refused, not dropped."""
    try:
        content = read_text_file(text, MEMBER_FILE_LIMIT)
    except OSError as e:
        raise ArgumentError(f"cannot read {text}: {e.strerror or e}") from None
    except ValueError as e:
        raise ArgumentError(f"{text} {e}") from None
    lines: list[str] = []
    for n, line in enumerate(content.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key = line.partition("=")[0].strip()
        if key == "version":
            continue
        if not key.startswith("server."):
            # The line is not repeated: a wrong path may name a file of secrets.
            raise ArgumentError(f"{text}, line {n}: not a server.N= line (only those and a version= line are read)")
        try:
            lines.append(_member_line(line))
        except ArgumentError as e:
            raise ArgumentError(f"{text}, line {n}: {e}") from None
    if not lines:
        raise ArgumentError(f"{text} has no server.N= line")
    return tuple(lines)


@dataclass(frozen=True, kw_only=True)
class ReconfigArguments:
    """A change (``-add``, ``-remove``) or a whole new membership (``-members`` or ``-file``)."""

    joining: tuple[str, ...] | None = option("add", _member_list)
    leaving: tuple[int, ...] | None = option("remove", _server_ids)
    members: tuple[str, ...] | None = option("members", _member_list)
    #: The member lines read from ``-file``.
    file: tuple[str, ...] | None = option("file", _member_file)
    #: -1: whatever the current configuration is.
    from_config: int = option("v", _config_version, default=-1)
    stat: bool = flag("s")

    def __post_init__(self) -> None:
        incremental = self.joining is not None or self.leaving is not None
        if self.members is not None and self.file is not None:
            raise ArgumentError("-members and -file cannot be combined (each is the whole new membership)")
        whole = self.members is not None or self.file is not None
        if incremental and whole:
            raise ArgumentError(
                f"-{'members' if self.members is not None else 'file'} cannot be combined with -add or -remove"
                " (a whole new membership, or a change to the current one)"
            )
        if not incremental and not whole:
            raise ArgumentError("give -add and/or -remove, or -members, or -file")

    @property
    def new_members(self) -> tuple[str, ...] | None:
        return self.members if self.members is not None else self.file


@command(
    "reconfig",
    "reconfig [-s] [-v version] [-add members] [-remove ids] | [-members members] | [-file path]",
    "change the ensemble's membership: -add member lines (server.N=host:quorumPort:electionPort[:role];"
    "[clientHost:]clientPort, comma-separated) and -remove server ids, or the whole new membership with"
    " -members or -file (its server.N= lines; a version= line there is ignored); -v only if the"
    " configuration is still that version (hexadecimal, as config shows it); -s with the stat",
    ReconfigArguments,
)
async def cmd_reconfig(ctx: Context, a: ReconfigArguments) -> None:
    client = ctx.require_client()
    try:
        config: EnsembleConfig = await client.reconfig(
            joining=a.joining, leaving=a.leaving, members=a.new_members, from_config=a.from_config
        )
    except ConnectionLossError as e:
        raise ConnectError(
            f"{e}: the reconfiguration may have been applied (the server this session was on may have left"
            " the ensemble); read it with config"
        ) from None
    ctx.print("Committed new configuration:")
    ctx.print(config.text())
    if a.stat and config.stat is not None:
        ctx.print(fmt.format_stat(config.stat))

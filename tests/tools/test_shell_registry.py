"""The ``zkwire`` shell's command registry without a server: how words become each command's typed
arguments (options anywhere, ``--``, negative numbers, UTF-8), every command's argument errors with their
exact messages, the declarations the registry refuses, and running commands that need no session."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pytest

from zkwire.acl import parse_acl
from zkwire.client.fourletter import FOUR_LETTER_WORDS
from zkwire.constants import WatcherType
from zkwire.errors import InvalidInputError
from zkwire.sansio.session import HostPort
from zkwire.shell.commands import COMMANDS
from zkwire.shell.commands.access import AddAuthArguments, SetAclArguments
from zkwire.shell.commands.ensemble import ConfigArguments, ReconfigArguments
from zkwire.shell.commands.nodes import CreateArguments, DeleteAllArguments, LsArguments, SetArguments
from zkwire.shell.commands.quotas import DelQuotaArguments, SetQuotaArguments
from zkwire.shell.commands.server import FourArguments
from zkwire.shell.commands.watches import AddWatchArguments, PrintWatchesArguments, RemoveWatchesArguments
from zkwire.shell.context import Context
from zkwire.shell.dispatch import execute, execute_line
from zkwire.shell.outcomes import EXIT_CONNECTION, EXIT_OK, EXIT_USAGE, ArgumentError, UsageError
from zkwire.shell.registry import (
    Command,
    NoArguments,
    flag,
    lookup,
    option,
    optional_positional,
    positional,
    prepare,
    split_line,
)


def parse(line: str) -> object:
    """The arguments of a shell line's command."""
    words = split_line(line)
    return lookup(words[0]).parse(words[1:])


def usage_error(line: str) -> str:
    """The message a shell line is refused with, before anything is sent."""
    with pytest.raises((UsageError, InvalidInputError)) as caught:
        parse(line)
    return str(caught.value)


# ------------------------------------------------------------------------------- typed arguments


def test_words_become_typed_arguments() -> None:
    assert parse("set -s -v 3 /a data") == SetArguments(path="/a", data="data", stat=True, version=3)
    assert parse("set /a data") == SetArguments(path="/a", data="data", stat=False, version=-1)
    assert parse("create -s -t 500 /a/ x world:anyone:r") == CreateArguments(
        path="/a/", data="x", acl=parse_acl("world:anyone:r"), sequential=True, ttl=500
    )
    assert parse("create /a") == CreateArguments(path="/a")
    assert parse("setAcl -R /a digest:u:h:cdrwa") == SetAclArguments(
        path="/a", acl=parse_acl("digest:u:h:cdrwa"), recursive=True
    )
    assert parse("deleteall /a") == DeleteAllArguments(path="/a", batch=1000)
    assert parse("addWatch -m persistent /a") == AddWatchArguments(path="/a", recursive=False)
    assert parse("addWatch /a") == AddWatchArguments(path="/a", recursive=True)
    assert parse("printwatches off") == PrintWatchesArguments(on=False)
    assert parse("printwatches") == PrintWatchesArguments(on=None)
    assert parse("four isro [::1]:2182") == FourArguments(word="isro", servers=(HostPort("::1", 2182),))
    assert parse("whoami") == NoArguments()
    setquota = parse("setquota -B 1024 /a")
    assert isinstance(setquota, SetQuotaArguments) and setquota.limit == ("byteHardLimit", 1024)
    delquota = parse("delquota /a")
    assert isinstance(delquota, DelQuotaArguments) and delquota.limit is None
    assert parse("delquota -N /a") == DelQuotaArguments(path="/a", count_hard_limit=True)
    removewatches = parse("removewatches /a")
    assert isinstance(removewatches, RemoveWatchesArguments) and removewatches.kind is WatcherType.ANY
    assert parse("config -sc") == ConfigArguments(stat=True, client=True)
    assert parse("reconfig -remove 3,4 -v 1000000a -s") == ReconfigArguments(
        leaving=(3, 4), from_config=0x1000000A, stat=True
    )
    # Member lines are checked and sent as given, each as server.N= (a bare N= is taken too).
    assert parse("reconfig -add 'server.4=h:1:2;3, 5=[::1]:1:2:observer;0.0.0.0:9' -v 0x1F") == ReconfigArguments(
        joining=("server.4=h:1:2;3", "server.5=[::1]:1:2:observer;0.0.0.0:9"), from_config=0x1F
    )
    members = parse("reconfig -members server.1=a:1:2;3,server.2=b:1:2;3")
    assert isinstance(members, ReconfigArguments) and members.new_members == ("server.1=a:1:2;3", "server.2=b:1:2;3")


def test_reconfig_reads_the_server_lines_of_a_file(tmp_path: Path) -> None:
    path = tmp_path / "dynamic.cfg"
    path.write_text(
        "# copied from config\n\nserver.1 = a:1:2:participant;3\n  server.2=b:1:2;0.0.0.0:3\nversion=10000000a\n"
    )
    parsed = parse(f"reconfig -file {path}")
    assert isinstance(parsed, ReconfigArguments)
    assert parsed.new_members == ("server.1=a:1:2:participant;3", "server.2=b:1:2;0.0.0.0:3")
    assert parsed.from_config == -1  # the file's version= line is not a condition: -v is
    (tmp_path / "empty.cfg").write_text("version=1\n")
    assert (
        usage_error(f"reconfig -file {tmp_path / 'empty.cfg'}")
        == f"reconfig: {tmp_path / 'empty.cfg'} has no server.N= line"
    )
    (tmp_path / "binary.cfg").write_bytes(b"server.1=\xff")
    assert (
        usage_error(f"reconfig -file {tmp_path / 'binary.cfg'}")
        == f"reconfig: {tmp_path / 'binary.cfg'} is not UTF-8 text"
    )
    (tmp_path / "secret.cfg").write_text("password=hunter2\n")
    message = usage_error(f"reconfig -file {tmp_path / 'secret.cfg'}")
    assert "line 1: not a server.N= line" in message and "hunter2" not in message
    assert "line 1: not a server id" in usage_error(f"reconfig -file {_file(tmp_path, 'server.x=a:1:2;3')}")
    assert usage_error(f"reconfig -file {tmp_path}") == f"reconfig: cannot read {tmp_path}: Is a directory"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "one.cfg"
    path.write_text(text)
    return path


def test_options_before_or_after_positionals_combined_or_attached() -> None:
    assert parse("removewatches /x -c") == parse("removewatches -c /x")
    assert parse("ls -s -w /x") == parse("ls /x -sw") == LsArguments(path="/x", stat=True, watch=True)
    assert parse("set -v3 /a d") == parse("set /a d -v 3") == parse("set /a -v 3 d")
    assert parse("set -sv3 /a d") == SetArguments(path="/a", data="d", stat=True, version=3)
    assert parse("set -v 1 -v 2 /a d") == SetArguments(path="/a", data="d", version=2)  # the last one counts
    assert usage_error("create -tes /a") == "create: ttl (milliseconds) must be a number, not 'es'"


def test_double_dash_ends_the_options() -> None:
    assert parse("set /a -- -v") == SetArguments(path="/a", data="-v")
    assert parse("create -e -- /a -s") == CreateArguments(path="/a", data="-s", ephemeral=True)
    assert parse("set -- /a --") == SetArguments(path="/a", data="--")
    # After "--" an option is a positional: here an invalid path, not an unknown option.
    with pytest.raises(InvalidInputError, match="'-x'"):
        parse("ls -- -x")


def test_negative_numbers_and_a_lone_dash_are_positionals() -> None:
    assert parse("set /a -5") == SetArguments(path="/a", data="-5")
    assert parse("create /a -12.5") == CreateArguments(path="/a", data="-12.5")
    assert parse("set /a -") == SetArguments(path="/a", data="-")
    assert parse("set -v -1 /a x") == SetArguments(path="/a", data="x", version=-1)
    assert parse("delete -v -1 /a") == parse("delete /a -v-1")
    assert usage_error("redo -1") == "redo: command number must be from 0 to 2147483647, not -1"


def test_words_that_are_not_utf8_are_refused_by_position_never_shown() -> None:
    secret = "s3cr\udcffet"  # how Python keeps a byte that was not UTF-8 on the command line
    with pytest.raises(UsageError) as caught:
        lookup("addauth").parse(["digest", f"user:{secret}"])
    assert str(caught.value) == "addauth: argument 2 is not valid UTF-8 text"
    with pytest.raises(UsageError, match=r"^create: argument 1 is not valid UTF-8 text$"):
        lookup("create").parse(["/a\udcff"])
    assert "s3cr" not in repr(AddAuthArguments(scheme="digest", credential="user:s3cret"))


# ------------------------------------------------------------------------------- each command's errors

#: Every command's argument errors: the shell line and its whole one-line message.
ERRORS = [
    ("bogus", "Command not found: bogus (try help)"),
    ("ls", "ls: missing argument; usage: ls [-s] [-w] [-R] path"),
    ("ls /a /b", "ls: unexpected argument '/b'; usage: ls [-s] [-w] [-R] path"),
    ("ls -x /", "ls: unknown option -x; usage: ls [-s] [-w] [-R] path"),
    ("ls -sx /", "ls: unknown option -x; usage: ls [-s] [-w] [-R] path"),
    (
        "ls --long /",
        "ls: unknown option --long (zkwire's own options go before the command); usage: ls [-s] [-w] [-R] path",
    ),
    ("ls -R -w /", "ls: -R cannot be combined with -s or -w"),
    ("create -t 0 /a", "create: ttl (milliseconds) must be from 1 to 1099511627775, not 0"),
    ("create -t soon /a", "create: ttl (milliseconds) must be a number, not 'soon'"),
    ("create /a d world:anyone:r extra", "create: unexpected argument 'extra'; usage: " + COMMANDS["create"].usage),
    ("stat", "stat: missing argument; usage: stat [-w] path"),
    ("stat -s /a", "stat: unknown option -s; usage: stat [-w] path"),
    ("get -w", "get: missing argument; usage: get [-s] [-w] path"),
    ("set /a", "set: missing argument; usage: set [-s] [-v version] path data"),
    ("set -v", "set: option -v needs a value; usage: set [-s] [-v version] path data"),
    ("set -v abc /a x", "set: version must be a number, not 'abc'"),
    ("set -v -2 /a x", "set: version must be from -1 to 2147483647, not -2"),
    ("delete -v 99999999999 /a", "delete: version must be from -1 to 2147483647, not 99999999999"),
    ("deleteall /", "deleteall: refusing to delete everything under /"),
    ("deleteall /a -b 0", "deleteall: batch size must be from 1 to 100000, not 0"),
    ("deleteall /a -b", "deleteall: option -b needs a value; usage: deleteall path [-b batch size]"),
    ("getAcl", "getAcl: missing argument; usage: getAcl [-s] path"),
    ("setAcl /a", "setAcl: missing argument; usage: " + COMMANDS["setAcl"].usage),
    ("setAcl -v x /a world:anyone:r", "setAcl: version must be a number, not 'x'"),
    ("addauth digest", "addauth: missing argument; usage: addauth scheme auth"),
    ("addauth '' u:p", "addauth: the scheme must not be empty"),
    ("whoami me", "whoami: unexpected argument 'me'; usage: whoami"),
    ("sync", "sync: missing argument; usage: sync path"),
    ("getAllChildrenNumber", "getAllChildrenNumber: missing argument; usage: getAllChildrenNumber path"),
    ("addWatch -m SOMETIMES /a", "addWatch: mode must be PERSISTENT or PERSISTENT_RECURSIVE, not 'SOMETIMES'"),
    ("addWatch /a /b", "addWatch: unexpected argument '/b'; usage: addWatch [-m mode] path"),
    ("removewatches /a -c -d", "removewatches: use only one of -c, -d, -a"),
    ("removewatches /a -cda", "removewatches: use only one of -c, -d, -a"),
    ("printwatches maybe", "printwatches: say on or off"),
    ("setquota /a", "setquota: one of -n, -b, -N, -B is required"),
    ("setquota -n 1 -b 2 /a", "setquota: use only one of -n, -b, -N, -B"),
    ("setquota -n x /a", "setquota: quota must be a number, not 'x'"),
    ("setquota -N -1 /a", "setquota: quota must be from 0 to 9223372036854775807, not -1"),
    ("setquota -n 1 /", "setquota: quotas cannot be set on /"),
    ("setquota -n 1 /zookeeper/x", "setquota: quotas cannot be set on /zookeeper/x"),
    ("listquota /zookeeper", "listquota: quotas cannot be set on /zookeeper"),
    ("delquota -n -b /a", "delquota: use only one of -n, -b, -N, -B"),
    ("delquota -v /a", "delquota: unknown option -v; usage: delquota [-n|-b|-N|-B] path"),
    ("history 3", "history: unexpected argument '3'; usage: history"),
    ("redo", "redo: missing argument; usage: redo cmdno"),
    ("redo abc", "redo: command number must be a number, not 'abc'"),
    ("connect a b", "connect: unexpected argument 'b'; usage: " + COMMANDS["connect"].usage),
    ("close now", "close: unexpected argument 'now'; usage: close"),
    ("quit now", "quit: unexpected argument 'now'; usage: quit"),
    ("exit now", "quit: unexpected argument 'now'; usage: quit"),
    ("four", "four: missing argument; usage: four word [host:port]"),
    ("four RUOK", f"four: unknown four-letter word 'RUOK' (one of {', '.join(FOUR_LETTER_WORDS)})"),
    ("version x", "version: unexpected argument 'x'; usage: version"),
    ("help a b", "help: unexpected argument 'b'; usage: help [command]"),
    ("config /a", "config: unexpected argument '/a'; usage: config [-c] [-w] [-s]"),
    ("reconfig", "reconfig: give -add and/or -remove, or -members, or -file"),
    ("reconfig -v 1", "reconfig: give -add and/or -remove, or -members, or -file"),
    ("reconfig -remove", "reconfig: option -remove needs a value; usage: " + COMMANDS["reconfig"].usage),
    ("reconfig -remove 1 -x", "reconfig: unknown option -x; usage: " + COMMANDS["reconfig"].usage),
    ("reconfig -remove 1 -sremove", "reconfig: unknown option -r; usage: " + COMMANDS["reconfig"].usage),
    ("reconfig -remove 1 /a", "reconfig: unexpected argument '/a'; usage: " + COMMANDS["reconfig"].usage),
    ("reconfig -remove 1,,2", "reconfig: -remove takes server ids separated by commas, not ''"),
    (
        "reconfig -remove 9223372036854775808",
        "reconfig: -remove takes server ids separated by commas, not '9223372036854775808'",
    ),
    (
        "reconfig -remove 1 -v -1",
        "reconfig: -v takes the configuration's version in hexadecimal (as config shows it), not '-1'",
    ),
    (
        "reconfig -remove 1 -v 8000000000000000",
        "reconfig: -v takes the configuration's version in hexadecimal (as config shows it), not '8000000000000000'",
    ),
    ("reconfig -add server.4=h:1:2;3,", "reconfig: an empty member line (two commas in a row, or one at an end?)"),
    ("reconfig -add server.4=h:1:2:voter;3", "reconfig: unknown role in 'server.4=h:1:2:voter;3'"),
    (
        "reconfig -add 'server.4=h:1:2;3' -members 'server.4=h:1:2;3'",
        "reconfig: -members cannot be combined with -add or -remove"
        " (a whole new membership, or a change to the current one)",
    ),
]


@pytest.mark.parametrize(("line", "message"), ERRORS, ids=[line for line, _ in ERRORS])
def test_argument_errors(line: str, message: str) -> None:
    assert usage_error(line) == message


#: Arguments the client's own validators refuse (paths, ACL text, create modes, connect strings), before
#: anything is sent: the line and a word of the message.
CLIENT_REFUSALS = [
    ("ls relative", "'relative'"),
    ("get /double//slash", "'/double//slash'"),
    ("create /a/", "'/a/'"),
    ("create -t 5 -e /a", "TTL"),
    ("create -c -s /a", "container"),
    ("create /a d world:anyone:q", "'q'"),
    ("setAcl /a world:anyone", "'world:anyone'"),
    ("getEphemerals relative", "'relative'"),
    ("four srvr bad::x", "'bad::x'"),
]


@pytest.mark.parametrize(("line", "word"), CLIENT_REFUSALS, ids=[line for line, _ in CLIENT_REFUSALS])
def test_arguments_the_client_refuses(line: str, word: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse(line)
    assert word in str(caught.value) and "\n" not in str(caught.value)


def test_every_command_refuses_unknown_options_and_extra_arguments() -> None:
    for name, cmd in COMMANDS.items():
        with pytest.raises(UsageError) as caught:
            cmd.parse(["-Z"])
        assert str(caught.value) == f"{name}: unknown option -Z; usage: {cmd.usage}"
        too_many = ["/a"] * (len(cmd.syntax.positionals) + 1)
        with pytest.raises(UsageError, match=r"unexpected argument|missing argument|only one of|is required"):
            cmd.parse(too_many)


def test_every_option_is_in_its_usage_line() -> None:
    for name, cmd in COMMANDS.items():
        for letter in [*cmd.syntax.flags, *cmd.syntax.options]:
            assert f"-{letter}" in cmd.usage, (name, letter)


def test_a_flag_by_its_long_name() -> None:
    session = COMMANDS["session"]
    assert session.parse(["--json"]) == session.parse(["-j"]) != session.parse([])
    with pytest.raises(UsageError) as caught:
        session.parse(["--jsonl"])
    assert str(caught.value) == (
        "session: unknown option --jsonl (zkwire's own options go before the command); usage: session [-j|--json]"
    )


def test_lookup_by_alias_and_in_any_case() -> None:
    assert lookup("exit") is COMMANDS["quit"]
    assert lookup("?") is COMMANDS["help"]
    assert lookup("GETACL") is COMMANDS["getAcl"]
    assert lookup("getallchildrennumber") is COMMANDS["getAllChildrenNumber"]


def test_shell_only_commands_are_refused_outside_the_shell() -> None:
    for name in ("history", "redo", "connect", "close", "quit", "session"):
        words = [name, "1"] if name == "redo" else [name]
        with pytest.raises(UsageError, match=f"^{name}: only available in the interactive shell$"):
            prepare(words, interactive=False)
        assert prepare(words, interactive=True).command is COMMANDS[name]
    # The arguments are checked first.
    with pytest.raises(UsageError, match="missing argument"):
        prepare(["redo"], interactive=False)


def test_split_line() -> None:
    assert split_line("create /a \"two words\" 'x y'") == ["create", "/a", "two words", "x y"]
    assert split_line("   ") == []
    with pytest.raises(UsageError, match=r"^cannot parse the line: No closing quotation$"):
        split_line('get "/a')


# ------------------------------------------------------------------------------- declarations


def test_declarations_the_registry_refuses() -> None:
    async def handler(ctx: Context, a: object) -> None:
        pass

    @dataclass(frozen=True, kw_only=True)
    class Undeclared:
        path: str = "/"

    @dataclass(frozen=True, kw_only=True)
    class RequiredAfterOptional:
        first: str | None = optional_positional(str)
        second: str = positional(str)

    @dataclass(frozen=True, kw_only=True)
    class SameLetter:
        a: bool = flag("x")
        b: int | None = option("x", int)

    @dataclass(frozen=True, kw_only=True)
    class LongLetter:
        a: bool = flag("xy")

    @dataclass(frozen=True, kw_only=True)
    class NotAWord:
        a: int | None = option("x-y", int)

    class NotADataclass:
        pass

    for arguments, message in [
        (Undeclared, "not declared"),
        (RequiredAfterOptional, "required positional after an optional"),
        (SameLetter, "letter 'x' unusable"),
        (LongLetter, "letter 'xy' unusable"),
        (NotAWord, "letter 'x-y' unusable"),
        (NotADataclass, "not a dataclass"),
    ]:
        with pytest.raises(TypeError, match=message):
            Command("probe", "probe", "probe", arguments, handler)
    with pytest.raises(TypeError, match="exclusive letters"):
        Command("probe", "probe", "probe", LsArguments, handler, exclusive="sq")


def test_an_option_named_by_a_word() -> None:
    async def handler(ctx: Context, a: object) -> None:
        pass

    @dataclass(frozen=True, kw_only=True)
    class Words:
        add: str | None = option("add", str)
        all: bool = flag("a")
        depth: int | None = option("d", int)

    probe = Command("probe", "probe [-a] [-d n] [-add x]", "probe", Words, handler)
    assert probe.parse(["-add", "-1"]) == Words(add="-1")  # the next word, whatever it looks like
    assert probe.parse(["-ad3"]) == Words(all=True, depth=3)  # letters still combine
    assert probe.parse(["-a", "-add", "x", "-d", "4"]) == Words(add="x", all=True, depth=4)
    with pytest.raises(UsageError, match=r"^probe: option -add needs a value;"):
        probe.parse(["-add"])
    with pytest.raises(UsageError, match=r"^probe: unknown option -x;"):
        probe.parse(["-add", "1", "-ax"])  # not the word: its letters, and x is none
    with pytest.raises(UsageError, match=r"^probe: unknown option -bogus;"):
        probe.parse(["-bogus"])


def test_a_converter_or_check_error_names_the_command() -> None:
    def even(text: str) -> int:
        value = int(text)
        if value % 2:
            raise ArgumentError(f"{value} is odd")
        return value

    @dataclass(frozen=True, kw_only=True)
    class Pair:
        low: int = positional(even)
        high: int = positional(even)

        def __post_init__(self) -> None:
            if self.high < self.low:
                raise ArgumentError("high is below low")

    async def handler(ctx: Context, a: Pair) -> None:
        pass

    pair = Command("pair", "pair low high", "two even numbers", Pair, handler)
    assert pair.parse(["-4", "2"]) == Pair(low=-4, high=2)
    with pytest.raises(UsageError, match=r"^pair: 3 is odd$"):
        pair.parse(["2", "3"])
    with pytest.raises(UsageError, match=r"^pair: high is below low$"):
        pair.parse(["4", "2"])


# ------------------------------------------------------------------------------- running without a session


def _context(*, interactive: bool = False) -> tuple[Context, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Context(hosts="127.0.0.1:1", interactive=interactive, out=out, err=err), out, err


async def test_commands_that_need_a_session_say_there_is_none() -> None:
    ctx, out, err = _context(interactive=True)
    assert await execute(ctx, ["get", "/a"]) == EXIT_CONNECTION
    assert (out.getvalue(), err.getvalue()) == ("", "Not connected (use: connect HOST:PORT)\n")


async def test_usage_errors_print_one_line_and_give_exit_2() -> None:
    ctx, out, err = _context()
    assert await execute_line(ctx, "set -v abc /a x") == EXIT_USAGE
    assert await execute_line(ctx, "get relative") == EXIT_USAGE
    assert await execute_line(ctx, 'get "/a') == EXIT_USAGE
    assert await execute_line(ctx, "history") == EXIT_USAGE
    assert out.getvalue() == ""
    assert err.getvalue().splitlines() == [
        "set: version must be a number, not 'abc'",
        "Invalid path 'relative': must start with \"/\"",
        "cannot parse the line: No closing quotation",
        "history: only available in the interactive shell",
    ]
    assert await execute_line(ctx, "   ") == EXIT_OK


async def test_session_free_commands_run() -> None:
    ctx, out, err = _context(interactive=True)
    assert await execute_line(ctx, "printwatches off") == EXIT_OK
    assert not ctx.print_watches
    assert await execute_line(ctx, "printwatches") == EXIT_OK
    assert await execute_line(ctx, "help get") == EXIT_OK
    ctx.record("printwatches on")
    assert await execute_line(ctx, "redo 0") == EXIT_OK
    assert ctx.print_watches
    assert await execute_line(ctx, "redo 7") == EXIT_USAGE
    ctx.record("redo 0")
    assert await execute_line(ctx, "redo 2") == EXIT_USAGE
    assert await execute_line(ctx, "history") == EXIT_OK
    assert await execute_line(ctx, "quit") == EXIT_OK
    assert ctx.quit_requested
    assert out.getvalue().splitlines() == [
        "printwatches is off",
        COMMANDS["get"].usage,
        "    " + COMMANDS["get"].summary,
        "0 - printwatches on",
        "1 - printwatches on",
        "2 - redo 0",
    ]
    assert err.getvalue().splitlines() == ["redo: no command 7 in the history", "redo: will not redo a redo"]


def test_arguments_built_directly_are_checked_too() -> None:
    with pytest.raises(ArgumentError, match="exactly one"):
        SetQuotaArguments(path="/a")
    with pytest.raises(ArgumentError, match="exactly one"):
        SetQuotaArguments(path="/a", count=1, bytes=2)
    with pytest.raises(ArgumentError, match="only one"):
        DelQuotaArguments(path="/a", count=True, bytes=True)
    with pytest.raises(ArgumentError, match="-R cannot be combined"):
        LsArguments(path="/a", recursive=True, watch=True)
    with pytest.raises(InvalidInputError):
        CreateArguments(path="/a/", sequential=False)
    assert CreateArguments(path="/a/", sequential=True).path == "/a/"


def test_an_x509_acl_keeps_the_commas_of_its_dn() -> None:
    from zkwire import ACL, Id, InvalidArgumentError, Perm
    from zkwire.acl import format_acl

    acl = parse_acl("x509:CN=alice,OU=ops,O=zkwire test:cdrwa, world:anyone:r")
    assert acl == (ACL(Perm.ALL, Id("x509", "CN=alice,OU=ops,O=zkwire test")), ACL(Perm.READ, Id("world", "anyone")))
    assert ",".join(format_acl(a) for a in acl) == "x509:CN=alice,OU=ops,O=zkwire test:cdrwa,world:anyone:r"
    with pytest.raises(InvalidArgumentError, match="is not scheme:id:perms"):
        parse_acl("x509:CN=alice,O=zkwire test")  # no permissions

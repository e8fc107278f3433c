"""ACL helpers: the standard ACL lists, digest ids, and zkCli's text syntax."""

from __future__ import annotations

import base64
import hashlib

from .constants import Perm
from .errors import InvalidArgumentError
from .protocol.records import ACL, Id

__all__ = [
    "OPEN_ACL_UNSAFE",
    "CREATOR_ALL_ACL",
    "READ_ACL_UNSAFE",
    "ANYONE_ID",
    "digest_id",
    "digest_acl",
    "parse_acl",
    "format_acl",
    "parse_perms",
    "format_perms",
]

ANYONE_ID = Id("world", "anyone")
#: Everyone may do everything.
OPEN_ACL_UNSAFE: tuple[ACL, ...] = (ACL(Perm.ALL, ANYONE_ID),)
#: All permissions for the creator's authenticated ids (the server expands ``auth:``).
CREATOR_ALL_ACL: tuple[ACL, ...] = (ACL(Perm.ALL, Id("auth", "")),)
#: Everyone may read.
READ_ACL_UNSAFE: tuple[ACL, ...] = (ACL(Perm.READ, ANYONE_ID),)

_LETTERS = {"r": Perm.READ, "w": Perm.WRITE, "c": Perm.CREATE, "d": Perm.DELETE, "a": Perm.ADMIN}


def digest_id(user: str, password: str) -> Id:
    """The ``digest`` id the server derives for ``user:password``: user:base64(sha1(user:password))."""
    raw = f"{user}:{password}".encode()
    return Id("digest", f"{user}:{base64.b64encode(hashlib.sha1(raw).digest()).decode()}")


def digest_acl(user: str, password: str, perms: int = Perm.ALL) -> ACL:
    """An ACL entry granting ``perms`` to the digest identity ``user:password`` (see :func:`digest_id`).
    The session then needs ``add_auth("digest", "user:password")``.  Raises nothing."""
    return ACL(perms, digest_id(user, password))


def parse_perms(text: str) -> int:
    perms = 0
    for ch in text:
        try:
            perms |= _LETTERS[ch]
        except KeyError:
            raise InvalidArgumentError(f"unknown permission letter {ch!r} in {text!r} (use c, d, r, w, a)") from None
    return perms


def format_perms(perms: int) -> str:
    return "".join(ch for ch, bit in (("c", 4), ("d", 8), ("r", 1), ("w", 2), ("a", 16)) if perms & bit)


def parse_acl(text: str) -> tuple[ACL, ...]:
    """zkCli's syntax: ``scheme:id:perms`` entries separated by commas.

    The id may itself contain colons (``digest:user:hash:cdrwa``, ``ip:10.0.0.1:r``); the permissions
    are what follows the last colon.  An ``x509`` id is a certificate's DN, itself a list separated by
    commas (``x509:CN=alice,O=example:cdrwa``): its commas are part of it.
    """
    acls: list[ACL] = []
    entries: list[str] = []
    for fragment in text.split(","):
        # A fragment of an x509 DN (no colon of its own yet to end the entry) continues that entry.
        if entries and entries[-1].lstrip().startswith("x509:") and entries[-1].count(":") < 2:
            entries[-1] += "," + fragment
        else:
            entries.append(fragment)
    for entry in entries:
        entry = entry.strip()
        if not entry:
            continue
        first = entry.find(":")
        last = entry.rfind(":")
        if first == -1 or first == last:
            raise InvalidArgumentError(f"ACL entry {entry!r} is not scheme:id:perms")
        scheme, ident, perms = entry[:first], entry[first + 1 : last], entry[last + 1 :]
        acls.append(ACL(parse_perms(perms), Id(scheme, ident)))
    if not acls:
        raise InvalidArgumentError(f"no ACL entries in {text!r}")
    return tuple(acls)


def format_acl(acl: ACL) -> str:
    return f"{acl.id.scheme}:{acl.id.id}:{format_perms(acl.perms)}"

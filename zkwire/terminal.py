"""Text that came from the wire, made safe to print on a terminal.

A znode path, node data, an ACL id, a four-letter word's answer or an error message read from a
server may hold terminal control sequences (``ESC ]0;title BEL``, ``ESC [2J``, C1 controls, bidi
overrides).  Printed raw they can retitle the window, clear the screen, move the cursor or make text read
backwards.  :func:`escape_controls` shows such characters as Python escapes (``\\x1b``, ``\\u202e``) and
leaves everything else (any printable character of any script, spaces) as it is.
"""

from __future__ import annotations

import unicodedata

__all__ = ["escape_controls"]

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_controls(text: str, *, keep: str = "") -> str:
    """``text`` with every control, format, separator (other than spaces), surrogate, private-use and
    unassigned character written as an escape; characters in ``keep`` (say ``"\\n"``) stay as they are.

    Printable text is returned unchanged (and fast).
    """
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch.isprintable() or ch in keep or unicodedata.category(ch) == "Zs":
            out.append(ch)
            continue
        short = _SHORT.get(ch)
        if short is not None:
            out.append(short)
            continue
        code = ord(ch)
        if code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)

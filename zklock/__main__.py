"""``python -m zklock``: the zklock command line (see :mod:`zklock.cli`)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())

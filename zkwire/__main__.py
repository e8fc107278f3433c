"""``python -m zkwire``: the zkwire command line (see :mod:`zkwire.cli`)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())

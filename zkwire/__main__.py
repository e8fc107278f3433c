"""``python -m zkwire``: the zkwire command line (see :mod:`zkwire.shell.main`)."""

from __future__ import annotations

from .shell.main import main

raise SystemExit(main())

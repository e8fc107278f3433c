"""zklock: lock recipes on zkwire (mutex; more to come), compatible with Apache Curator's and kazoo's nodes."""

from __future__ import annotations

from .errors import LockError, LockLostError, NotHeldError
from .mutex import Lease, Mutex, default_identifier

__all__ = ["Mutex", "Lease", "LockError", "LockLostError", "NotHeldError", "default_identifier"]

"""The commands of the ``zkwire`` shell, by kind; importing this package registers them all in
:data:`COMMANDS` (that of :mod:`zkwire.shell.registry`).

* :mod:`~zkwire.shell.commands.nodes` -- nodes and their data (``ls``, ``create``, ``get``, ``set``, ...);
* :mod:`~zkwire.shell.commands.access` -- ACLs and authentication (``getAcl``, ``setAcl``, ``addauth``,
  ``whoami``);
* :mod:`~zkwire.shell.commands.watches` -- ``addWatch``, ``removewatches``, ``printwatches``;
* :mod:`~zkwire.shell.commands.quotas` -- ``setquota``, ``listquota``, ``delquota``;
* :mod:`~zkwire.shell.commands.server` -- ``four`` (four-letter words), ``version``;
* :mod:`~zkwire.shell.commands.ensemble` -- ``config``, ``reconfig`` (the ensemble's membership);
* :mod:`~zkwire.shell.commands.session` -- the shell's own: ``history``, ``redo``, ``connect``, ``close``,
  ``quit``, ``help``;
* :mod:`~zkwire.shell.commands.tree` -- walking subtrees, for the commands above.
"""

from __future__ import annotations

from ..registry import COMMANDS
from . import access, ensemble, nodes, quotas, server, session, watches

__all__ = ["COMMANDS", "access", "ensemble", "nodes", "quotas", "server", "session", "watches"]

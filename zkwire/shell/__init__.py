"""The ``zkwire`` command line: a zkCli-grade shell.

* :mod:`~zkwire.shell.main` -- the entry point and the interactive loop;
* :mod:`~zkwire.shell.commands` -- the commands;
* :mod:`~zkwire.shell.format` -- rendering of stats, ACLs and events;
* :mod:`~zkwire.shell.runtime` -- what every zkwire command line shares (argument parsing, Ctrl-C,
  exit codes); public, also used by ``zklock``.
"""

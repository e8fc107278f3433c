"""The ``zkwire`` command line: a zkCli-grade shell.

* :mod:`~zkwire.shell.main` -- the entry point: ``zkwire``'s own options, subprograms (``trace``);
* :mod:`~zkwire.shell.one_shot` -- running one command (and waiting for its watch);
* :mod:`~zkwire.shell.interactive` -- the interactive shell: its loop, the prompt, Ctrl-C;
* :mod:`~zkwire.shell.line_reader` -- how the shell reads a line (readline, the terminal's Ctrl-C, history);
* :mod:`~zkwire.shell.completion` -- Tab completion of command names, options and znode paths;
* :mod:`~zkwire.shell.registry` -- the command registry: each command's typed arguments and how
  command-line words become them;
* :mod:`~zkwire.shell.argument_types` -- converters of words shared by the commands (paths, versions,
  numbers, ACL text);
* :mod:`~zkwire.shell.commands` -- the commands, a module per kind (nodes, access, watches, quotas,
  server, session);
* :mod:`~zkwire.shell.context` -- the session context the commands run against;
* :mod:`~zkwire.shell.dispatch` -- running a command line against a context;
* :mod:`~zkwire.shell.outcomes` -- exit codes and the exceptions that lead to them;
* :mod:`~zkwire.shell.format` -- rendering of stats, ACLs and events;
* :mod:`~zkwire.shell.runtime` -- what every zkwire command line shares (argument parsing, Ctrl-C,
  exit codes, the choice of server); public (the API reference's command-line toolkit), also used by
  ``zklock``.  The other modules are the shell itself, not an API.
"""

"""The module behind zkwire's ``pytest11`` entry point: command-line options and ini keys, nothing more.

Installing zkwire must change nothing in test suites that do not ask for ZooKeeper, so this module
defines no fixture, starts nothing and imports nothing heavy. The fixtures (:mod:`zkwire.testing.plugin`)
are loaded only when a suite opts in, in any of these ways:

* ``pytest --zk`` (or ``--zk-backend``/``--zk-hosts`` on the command line);
* ``zk_enable = true`` in the pytest configuration (``[tool.pytest.ini_options]``, ``pytest.ini``...);
* ``-p zkwire.testing.plugin`` (also works with ``-p no:zkwire``, which turns this module off).

Settings are taken from the command line, then the environment, then the ini file::

    --zk-backend / ZKWIRE_TEST_BACKEND / zk_backend      local (default), docker, external
    --zk-hosts   / ZKWIRE_TEST_HOSTS   / zk_hosts        an existing ensemble (implies external)
    --zk-image   / ZKWIRE_TEST_IMAGE   / zk_image        docker image (default: zkwire/zookeeper:3.8 if
                                                        built here, else zookeeper:3.8)
    --zk-tick-time / ZKWIRE_TEST_TICK_TIME / zk_tick_time   tickTime in ms (default 200)
    --zk-port    / ZKWIRE_TEST_PORT    / zk_port         pinned client port of the standalone server
                                                        (zk_server; default: a free port)
    --zk-ensemble-ports / ZKWIRE_TEST_ENSEMBLE_PORTS / zk_ensemble_ports   pinned client ports of the
                                                        ensemble members, "p1,p2,p3"
    --zk-root    / - / zk_root                           parent of the per-test chroots (/zkwire-pytest)
    --zk-keep-chroots / - / zk_keep_chroots              leave each test's chroot on the server
    --zk-log-lines / - / zk_log_lines                    server log lines shown for a failed test (100)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = ["BACKENDS", "Settings", "add_options", "enabled", "settings"]

PLUGIN = "zkwire.testing.plugin"
BACKENDS = ("local", "docker", "external")

_added: set[int] = set()


def add_options(parser: pytest.Parser) -> None:
    """Add zkwire's options and ini keys to ``parser`` (once, whoever asks first)."""
    if id(parser) in _added:
        return
    _added.add(id(parser))
    group = parser.getgroup("zookeeper", "ZooKeeper servers for tests (zkwire.testing)")
    group.addoption("--zk", action="store_true", dest="zk_enable", help="load zkwire's ZooKeeper fixtures")
    group.addoption(
        "--zk-backend",
        dest="zk_backend",
        choices=BACKENDS,
        help="where the servers run: local JVMs (default), docker containers, or an external ensemble",
    )
    group.addoption("--zk-hosts", dest="zk_hosts", help="connect string of an existing ensemble (external)")
    group.addoption("--zk-image", dest="zk_image", help="docker image of the server")
    group.addoption("--zk-tick-time", dest="zk_tick_time", type=int, help="tickTime of the servers, in ms")
    group.addoption("--zk-port", dest="zk_port", help="client port of the standalone server (default: a free one)")
    group.addoption("--zk-ensemble-ports", dest="zk_ensemble_ports", help="client ports of the ensemble, p1,p2,...")
    group.addoption("--zk-root", dest="zk_root", help="parent node of the per-test chroots")
    group.addoption("--zk-keep-chroots", action="store_true", default=None, dest="zk_keep_chroots")
    group.addoption("--zk-log-lines", dest="zk_log_lines", type=int, help="log lines shown for a failed test")
    parser.addini("zk_enable", "load zkwire's ZooKeeper fixtures", type="bool", default=False)
    parser.addini("zk_backend", "local, docker or external", default="")
    parser.addini("zk_hosts", "connect string of an existing ensemble", default="")
    parser.addini("zk_image", "docker image of the server", default="")
    parser.addini("zk_tick_time", "tickTime of the servers, in ms", default="")
    parser.addini("zk_port", "client port of the standalone server (default: a free one)", default="")
    parser.addini("zk_ensemble_ports", "client ports of the ensemble members, p1,p2,...", default="")
    parser.addini("zk_root", "parent node of the per-test chroots", default="")
    parser.addini("zk_keep_chroots", "leave each test's chroot on the server", type="bool", default=False)
    parser.addini("zk_log_lines", "server log lines shown for a failed test", default="")


def enabled(config: pytest.Config) -> bool:
    """The suite asked for the fixtures (``--zk``, ``--zk-backend``, ``--zk-hosts`` or ``zk_enable``)."""
    return bool(
        config.getoption("zk_enable", default=False)
        or config.getoption("zk_backend", default=None)
        or config.getoption("zk_hosts", default=None)
        or config.getini("zk_enable")
    )


class Settings:
    """The plugin's settings, resolved: command line, then environment, then ini, then default."""

    def __init__(self, config: pytest.Config) -> None:
        def pick(option: str, env: str | None, ini: str, default: str = "") -> str:
            value = config.getoption(option, default=None)
            if value is not None and value != "":
                return str(value)
            if env and os.environ.get(env, "").strip():
                return os.environ[env].strip()
            ini_value = config.getini(ini)
            return str(ini_value).strip() if ini_value not in (None, "") else default

        self.hosts = pick("zk_hosts", "ZKWIRE_TEST_HOSTS", "zk_hosts")
        if config.getoption("zk_backend", default=None):
            self.backend = str(config.getoption("zk_backend")).lower()
        elif config.getoption("zk_hosts", default=None):
            self.backend = "external"  # --zk-hosts wins over a backend named elsewhere
        else:
            backend = pick("zk_backend", "ZKWIRE_TEST_BACKEND", "zk_backend").lower()
            self.backend = backend or ("external" if self.hosts else "local")
        self.image = pick("zk_image", "ZKWIRE_TEST_IMAGE", "zk_image")
        self.tick_time_ms = int(pick("zk_tick_time", "ZKWIRE_TEST_TICK_TIME", "zk_tick_time", "200"))
        #: The standalone server's client port, or None for a free one; ``port_problem`` says what is
        #: wrong with a port that is not one.
        self.port: int | None = None
        self.port_problem: str | None = None
        port = pick("zk_port", "ZKWIRE_TEST_PORT", "zk_port")
        if port:
            if port.isdecimal() and 1 <= int(port) <= 65535:
                self.port = int(port)
            else:
                self.port_problem = f"zkwire: --zk-port {port!r}: not a TCP port (1 to 65535)"
        ports = pick("zk_ensemble_ports", "ZKWIRE_TEST_ENSEMBLE_PORTS", "zk_ensemble_ports")
        self.ensemble_ports = [int(p) for p in ports.replace(" ", "").split(",") if p] if ports else None
        self.root = "/" + pick("zk_root", None, "zk_root", "/zkwire-pytest").strip("/")
        self.keep_chroots = bool(config.getoption("zk_keep_chroots", default=None) or config.getini("zk_keep_chroots"))
        self.log_lines = int(pick("zk_log_lines", None, "zk_log_lines", "100"))

    def check(self) -> str | None:
        """What is wrong with the settings, or None."""
        if self.backend not in BACKENDS:
            return f"zkwire: backend {self.backend!r}: use one of {', '.join(BACKENDS)}"
        if self.backend == "external" and not self.hosts:
            return "zkwire: the external backend needs --zk-hosts (or ZKWIRE_TEST_HOSTS, or zk_hosts)"
        if self.port_problem is not None:
            return self.port_problem
        if self.port is not None and self.backend == "external":
            return "zkwire: --zk-port starts the server on that port: not with an external ensemble (--zk-hosts)"
        if self.root == "/":
            return "zkwire: zk_root cannot be /"
        return None


def settings(config: pytest.Config) -> Settings:
    return Settings(config)


# -- hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    if enabled(config) and not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.import_plugin(PLUGIN)

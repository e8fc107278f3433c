"""Service discovery in the layout of Apache Curator's ``curator-x-discovery``.

::

    discovery = zklock.ServiceDiscovery(stream, "/services")
    me = zklock.ServiceInstance("api", address="10.0.0.7", port=8080, payload={"zone": "eu"})
    async with discovery.registration(me) as registration:      # kept through reconnects and expiry
        async with discovery.open_cache("api") as cache:          # every "api" instance, kept current
            provider = zklock.ServiceProvider(cache, "round-robin")
            target = provider.get_instance()

Layout: each instance is the node ``<base>/<service name>/<instance id>`` holding the instance as JSON
(Curator's ``JsonInstanceSerializer`` in its default, compatible mode): ``name``, ``id``, ``address``,
``port``, ``sslPort``, ``payload``, ``registrationTimeUTC`` (ms), ``serviceType`` and ``uriSpec``;
unknown fields are ignored when reading.  A dict payload carries ``"@class"`` (Jackson's type tag,
``java.util.HashMap`` unless :attr:`ServiceInstance.payload_class` says otherwise) so that Java readers
can build their payload type.  Instances of type ``DYNAMIC`` (the default) are ephemeral nodes kept by a
:class:`~zklock.PersistentNode` (back after an expiry when given a :class:`zkwire.Sessions` stream);
``STATIC`` and ``PERMANENT`` ones are persistent.  Parents are containers, as Curator makes them.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from zkwire import (
    Client,
    ConnectionLossError,
    GetData,
    InvalidArgumentError,
    NoNodeError,
    SessionSource,
    current_client,
    open_tree_cache,
    validate_path,
)
from zkwire import TreeCache as _TreeCache

from .errors import LockError
from .persistent import NodeKeeper, PersistentNode
from .retrying import repeat

__all__ = [
    "ServiceInstance",
    "ServiceDiscovery",
    "ServiceRegistration",
    "ServiceCache",
    "ServiceProvider",
    "ServiceType",
    "InstanceDataError",
    "UriSpec",
]

ServiceType = Literal["DYNAMIC", "DYNAMIC_SEQUENTIAL", "STATIC", "PERMANENT"]
_TYPES = ("DYNAMIC", "DYNAMIC_SEQUENTIAL", "STATIC", "PERMANENT")
#: Jackson's type tag for a map payload.
HASHMAP = "java.util.HashMap"


class InstanceDataError(LockError, ValueError):
    """An instance node does not hold a service instance (not JSON, or a field of the wrong type)."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"service instance {path}: {what}")
        self.path = path


@dataclass(frozen=True, slots=True)
class UriSpec:
    """Curator's ``UriSpec``: parts, each a constant or a ``{variable}``."""

    parts: tuple[tuple[str, bool], ...]

    def to_json(self) -> dict[str, Any]:
        return {"parts": [{"value": value, "variable": variable} for value, variable in self.parts]}

    def build(self, instance: ServiceInstance) -> str:
        """The URI for ``instance`` (the variables Curator knows: name, id, address, port, ssl-port,
        scheme)."""
        values = {
            "name": instance.name,
            "id": instance.id,
            "address": instance.address or "",
            "port": "" if instance.port is None else str(instance.port),
            "ssl-port": "" if instance.ssl_port is None else str(instance.ssl_port),
            "scheme": "https" if instance.ssl_port is not None else "http",
        }
        return "".join(values.get(v, "") if variable else v for v, variable in self.parts)


def _name(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or "/" in value or value in (".", ".."):
        raise InvalidArgumentError(str(value), f"{what} must be a non-empty node name without '/'")
    return value


@dataclass(frozen=True)
class ServiceInstance:
    """One instance of a service (Curator's ``ServiceInstance``).

    Raises:
        InvalidArgumentError: a bad ``name``, ``id``, port or ``service_type`` (at construction).
    """

    name: str
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    address: str | None = None
    port: int | None = None
    ssl_port: int | None = None
    payload: Any = None
    registration_time_utc: int = field(default_factory=lambda: int(time.time() * 1000))
    service_type: ServiceType = "DYNAMIC"
    uri_spec: UriSpec | None = None
    #: Jackson's ``@class`` for a dict payload (what a Java reader builds).
    payload_class: str = HASHMAP
    #: Curator writes ``enabled`` only outside its compatible mode; a missing one reads as True.
    enabled: bool = True

    def __post_init__(self) -> None:
        _name(self.name, "the service name")
        _name(self.id, "the instance id")
        for port in (self.port, self.ssl_port):
            if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536):
                raise InvalidArgumentError(self.name, f"a port is an int from 0 to 65535, not {port!r}")
        if self.service_type not in _TYPES:
            raise InvalidArgumentError(self.name, f"service_type must be one of {', '.join(_TYPES)}")

    def to_json(self) -> bytes:
        """The node data: Curator's JSON, fields in its order."""
        payload = self.payload
        if isinstance(payload, dict):
            payload = {"@class": self.payload_class, **payload}
        obj: dict[str, Any] = {
            "name": self.name,
            "id": self.id,
            "address": self.address,
            "port": self.port,
            "sslPort": self.ssl_port,
            "payload": payload,
            "registrationTimeUTC": self.registration_time_utc,
            "serviceType": self.service_type,
            "uriSpec": self.uri_spec.to_json() if self.uri_spec is not None else None,
        }
        if not self.enabled:
            obj["enabled"] = False
        return json.dumps(obj, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes, path: str = "?") -> ServiceInstance:
        """Read an instance node (unknown fields are ignored).

        Raises:
            InstanceDataError: not JSON, or a field of the wrong type.
        """
        try:
            obj = json.loads(data.decode("utf-8"))
            if not isinstance(obj, dict):
                raise TypeError("not an object")
            payload = obj.get("payload")
            payload_class = HASHMAP
            if isinstance(payload, dict) and "@class" in payload:
                payload = dict(payload)
                payload_class = str(payload.pop("@class"))
            spec = obj.get("uriSpec")
            uri_spec = (
                UriSpec(tuple((str(p["value"]), bool(p["variable"])) for p in spec["parts"]))
                if isinstance(spec, dict)
                else None
            )
            return cls(
                name=obj["name"],
                id=obj["id"],
                address=obj.get("address"),
                port=obj.get("port"),
                ssl_port=obj.get("sslPort"),
                payload=payload,
                registration_time_utc=int(obj.get("registrationTimeUTC") or 0),
                service_type=obj.get("serviceType") or "DYNAMIC",
                uri_spec=uri_spec,
                payload_class=payload_class,
                enabled=obj.get("enabled", True) is not False,
            )
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, InvalidArgumentError) as e:
            raise InstanceDataError(path, f"not a service instance ({e})") from None

    def build_uri(self) -> str | None:
        """The instance's URI from its :class:`UriSpec`, if it has one."""
        return self.uri_spec.build(self) if self.uri_spec is not None else None


class ServiceDiscovery:
    """Register, query and watch service instances under ``base_path``; see :mod:`zklock.discovery`.

    Raises:
        InvalidPathError: a bad ``base_path`` (at construction).
    """

    def __init__(self, source: SessionSource, base_path: str) -> None:
        self.source = source
        self.base_path = validate_path(base_path)
        self._base = self.base_path.rstrip("/")

    def service_path(self, name: str) -> str:
        return f"{self._base}/{_name(name, 'the service name')}"

    def instance_path(self, name: str, instance_id: str) -> str:
        return f"{self.service_path(name)}/{_name(instance_id, 'the instance id')}"

    def registration(self, instance: ServiceInstance) -> ServiceRegistration:
        """``async with discovery.registration(instance) as reg:`` -- the instance registered while the
        block runs (kept through reconnects, and expiries with a stream), unregistered at its end."""
        return ServiceRegistration(self, instance)

    async def unregister(self, name: str, instance_id: str) -> None:
        """Delete an instance's node (any instance, e.g. a permanent one); a missing one is fine."""
        zk = await current_client(self.source)
        while True:
            try:
                await zk.delete(self.instance_path(name, instance_id))
                return
            except NoNodeError:
                return
            except ConnectionLossError:
                continue

    async def query_for_names(self) -> list[str]:
        """The services that have (or had) instances, sorted."""
        return await repeat(self.source, self._names)

    async def _names(self, zk: Client) -> list[str]:
        try:
            return sorted(await zk.get_children(self.base_path))
        except NoNodeError:
            return []

    async def query_for_instances(self, name: str) -> list[ServiceInstance]:
        """The instances of service ``name`` now, by id (an instance that goes while it is read is left
        out; a node that is not an instance raises :class:`InstanceDataError`)."""
        return await repeat(self.source, lambda zk: self._instances(zk, name))

    async def _instances(self, zk: Client, name: str) -> list[ServiceInstance]:
        path = self.service_path(name)
        try:
            ids = sorted(await zk.get_children(path))
        except NoNodeError:
            return []
        # One round trip for every instance's data (an instance gone meanwhile answers NoNode: left out).
        results = await zk.pipeline([GetData(f"{path}/{instance_id}") for instance_id in ids])
        out = []
        for instance_id, result in zip(ids, results, strict=True):
            if isinstance(result, NoNodeError):
                continue
            if isinstance(result, BaseException):
                raise result
            out.append(ServiceInstance.from_json(result[0], f"{path}/{instance_id}"))
        return out

    async def query_for_instance(self, name: str, instance_id: str) -> ServiceInstance | None:
        """One instance, or None."""
        path = self.instance_path(name, instance_id)

        async def read(zk: Client) -> ServiceInstance | None:
            try:
                data, _ = await zk.get_data(path)
            except NoNodeError:
                return None
            return ServiceInstance.from_json(data, path)

        return await repeat(self.source, read)

    @asynccontextmanager
    async def open_cache(self, name: str) -> AsyncIterator[ServiceCache]:
        """The instances of service ``name``, kept current by one persistent recursive watch while the
        block runs (it starts once they are read)."""
        async with open_tree_cache(self.source, self.service_path(name)) as tree:
            yield ServiceCache(tree, self.service_path(name))


class ServiceRegistration(NodeKeeper):
    """An instance registered while the ``async with`` block runs (see
    :meth:`ServiceDiscovery.registration`)."""

    def __init__(self, discovery: ServiceDiscovery, instance: ServiceInstance) -> None:
        self.discovery = discovery
        self.instance = instance
        ephemeral = instance.service_type in ("DYNAMIC", "DYNAMIC_SEQUENTIAL")
        self.node = PersistentNode(
            discovery.source,
            discovery.instance_path(instance.name, instance.id),
            instance.to_json(),
            mode="ephemeral" if ephemeral else "persistent",
            sequential=instance.service_type == "DYNAMIC_SEQUENTIAL",
        )

    @property
    def path(self) -> str | None:
        """The instance's node now (None while it is being re-created)."""
        return self.node.actual_path

    async def wait_registered(self) -> str:
        """Wait until the instance's node exists; returns its path."""
        return await self.node.wait_created()

    async def update(self, instance: ServiceInstance) -> None:
        """Replace the registered instance's data (same name and id; Curator's ``updateService``).

        Raises:
            InvalidArgumentError: ``instance`` has another name or id.
        """
        if (instance.name, instance.id) != (self.instance.name, self.instance.id):
            raise InvalidArgumentError(instance.name, "an update keeps the instance's name and id")
        self.instance = instance
        await self.node.set_data(instance.to_json())


class ServiceCache:
    """A service's instances, kept current (see :meth:`ServiceDiscovery.open_cache`)."""

    def __init__(self, tree: _TreeCache, path: str) -> None:
        self._tree = tree
        self.path = path

    @property
    def instances(self) -> list[ServiceInstance]:
        """The instances now, by id (nodes that are not instances are left out)."""
        out = []
        for instance_id in self._tree.children(self.path) or []:
            node = self._tree.get(f"{self.path}/{instance_id}")
            if node is None:
                continue
            try:
                out.append(ServiceInstance.from_json(node.data, node.path))
            except InstanceDataError:
                continue
        return out

    async def changes(self) -> AsyncIterator[list[ServiceInstance]]:
        """The instances after each change (registration, update, removal), coalesced."""
        last: list[ServiceInstance] | None = None
        async for _event in self._tree.events():
            now = self.instances
            if now != last:
                last = now
                yield now


class ServiceProvider:
    """Picks one instance of a cached service (Curator's ``ServiceProvider``): ``"round-robin"``
    (default) or ``"random"``; disabled instances are skipped.

    Raises:
        InvalidArgumentError: an unknown ``strategy``.
    """

    def __init__(self, cache: ServiceCache, strategy: Literal["round-robin", "random"] = "round-robin") -> None:
        if strategy not in ("round-robin", "random"):
            raise InvalidArgumentError(cache.path, f"strategy is 'round-robin' or 'random', not {strategy!r}")
        self.cache = cache
        self.strategy = strategy
        self._next = 0

    def get_instance(self) -> ServiceInstance | None:
        """One instance, or None if there is none."""
        instances = [i for i in self.cache.instances if i.enabled]
        if not instances:
            return None
        if self.strategy == "random":
            return random.choice(instances)
        chosen = instances[self._next % len(instances)]
        self._next += 1
        return chosen

    def all_instances(self) -> list[ServiceInstance]:
        return [i for i in self.cache.instances if i.enabled]

"""The session core's events for observers (zkwire.sansio.observing), against the fake server: what a
request, a connection's loss, a refusal or a notification makes, the times on the epoch clock, the tags
the I/O layer captures -- and that an unobserved core makes nothing."""

from __future__ import annotations

from helpers.fakeserver import ConnectionPair
from helpers.sessioncore import H1, SID, data_reply, get, get_data, make_core, notify, watch_via

from zkwire.constants import EventType, OpCode
from zkwire.errors import ConnectionLossError, NoNodeError
from zkwire.sansio.observing import (
    ConnectionEvent,
    ConnectionEventKind,
    Observation,
    ObservedEvent,
    RequestEvent,
    WatchEvent,
)
from zkwire.sansio.session import SessionState

K = ConnectionEventKind
EPOCH = 1_700_000_000.0


def observed_pair(capture: object = None) -> tuple[ConnectionPair, list[ObservedEvent]]:
    events: list[ObservedEvent] = []
    core = make_core()
    core.observed = Observation(events.append, EPOCH, capture)  # type: ignore[arg-type]
    pair = ConnectionPair(core)
    pair.connect(0.0)
    return pair, events


def test_a_connection_and_a_request_make_their_events_on_the_epoch_clock() -> None:
    pair, events = observed_pair()
    xid = get_data(pair.core, "/a", "tok", 1.0)
    watch_via(pair, xid, data_reply(b"x" * 100), now=1.25)
    connecting, connected, request = events
    assert isinstance(connecting, ConnectionEvent) and connecting.kind is K.CONNECTING
    assert connecting.server == H1 and connecting.at == EPOCH and connecting.session_id == 0
    assert isinstance(connected, ConnectionEvent) and connected.kind is K.CONNECTED and connected.session_id == SID
    assert isinstance(request, RequestEvent)
    assert (request.xid, request.op, request.path, request.server) == (xid, OpCode.GET_DATA, "/a", H1)
    assert request.started == EPOCH + 1.0 and request.finished == EPOCH + 1.25 and request.duration == 0.25
    assert request.bytes_out == 4 + 8 + 2 + 4 + 1  # length, header, "/a" as a ustring, watch flag
    assert request.bytes_in == 4 + 16 + 4 + 100 + 68  # length, reply header, data, stat
    assert (request.error, request.attempt, request.context, request.in_flight) == (None, 1, None, 1)


def test_an_error_reply_names_its_class() -> None:
    pair, events = observed_pair()
    xid = get_data(pair.core, "/none", "tok", 1.0)
    watch_via(pair, xid, err=NoNodeError.code)
    request = events[-1]
    assert isinstance(request, RequestEvent) and request.error is NoNodeError and request.error_name == "NoNodeError"


def test_a_lost_connection_fails_each_request_in_flight_once_then_suspends() -> None:
    pair, events = observed_pair()
    for i in range(3):
        get(pair, f"t{i}", now=1.0)
    del events[:]
    pair.core.connection_lost(2.0, cause="the server closed the connection")
    lost, suspended, *failed = events  # the state first, as for the application
    assert isinstance(lost, ConnectionEvent) and lost.kind is K.LOST
    assert lost.cause == "the server closed the connection" and lost.at == EPOCH + 2.0
    assert [type(e) for e in failed] == [RequestEvent] * 3
    assert all(isinstance(e, RequestEvent) and e.error is ConnectionLossError and e.finished is None for e in failed)
    assert len({e.xid for e in failed if isinstance(e, RequestEvent)}) == 3
    assert isinstance(suspended, ConnectionEvent) and suspended.kind is K.SUSPENDED


def test_a_reattach_and_an_expiry() -> None:
    pair, events = observed_pair()
    pair.core.connection_lost(1.0, cause="x")
    pair.core.connection_ended(1.0, answered=True)
    pair.connect(2.0)
    assert [e.kind for e in events if isinstance(e, ConnectionEvent)][-2:] == [K.CONNECTING, K.REATTACHED]
    pair.core.connection_lost(3.0, cause="y")
    pair.core.connection_ended(3.0, answered=True)
    pair.open(4.0)
    pair.to_client(pair.server.expire(), 4.5)
    kinds = [e.kind for e in events if isinstance(e, ConnectionEvent)]
    assert kinds[-2:] == [K.CONNECTING, K.EXPIRED]
    assert pair.core.state is SessionState.EXPIRED
    pair.core.connection_lost(5.0, cause="session expired")
    assert [e.kind for e in events if isinstance(e, ConnectionEvent)][-1] is K.EXPIRED  # no LOST after the end


def test_notifications_and_tags() -> None:
    calls: list[int] = []

    def capture() -> tuple[int, object]:
        calls.append(1)
        return 2, "ctx"

    pair, events = observed_pair(capture)
    xid = get_data(pair.core, "/d", "tok", 1.0, watcher=object())
    watch_via(pair, xid, data_reply())
    request = events[-1]
    assert isinstance(request, RequestEvent) and (request.attempt, request.context) == (2, "ctx")
    pair.core.send_request(OpCode.GET_DATA, None, "t2", 2.0, path="/x", tag=(3, "earlier"))
    assert len(calls) == 1  # a tag handed in is not captured again
    notify(pair, EventType.NODE_DATA_CHANGED, "/d", now=3.0)
    watch = events[-1]
    assert isinstance(watch, WatchEvent) and (watch.path, watch.watchers, watch.at) == ("/d", 1, EPOCH + 3.0)


def test_an_unobserved_core_makes_nothing_and_a_closed_one_says_closed() -> None:
    pair = ConnectionPair(make_core())
    pair.connect(0.0)
    get(pair, "t", now=1.0)
    assert pair.core.observed is None
    pair.core.connection_lost(2.0)
    events: list[ObservedEvent] = []
    pair.core.observed = Observation(events.append, 0.0)
    pair.core.mark_closed()
    assert [(type(e), getattr(e, "kind", None)) for e in events] == [(ConnectionEvent, K.CLOSED)]

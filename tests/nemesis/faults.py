"""The fault kinds.  Each is an async function of a :class:`FaultContext` that picks its target, applies
the fault, waits for its duration, undoes it (in a ``finally``, shielded: a cancelled run still heals),
and returns what it did -- or None when it found no target (the fault is then not counted).

Durations are relative to the session timeout T: "short" faults end before the client's read timeout
(2T/3) or the session's expiry, "long" ones last past T so that the session expires.

Two modes, because of the ``reconfig`` fault (a member removed, a fresh one added):

- the *proxied* mode (the default): each worker reaches the members through fault proxies of its own,
  its connect string names those proxies, and it does not follow the ensemble's configuration
  (``follow_ensemble=False``): a following client would replace the proxies' addresses with the
  members' real ones, read from ``/zookeeper/config``, and the proxy faults would then hit nothing.
  The ensemble's membership is fixed; every kind but ``reconfig`` applies.
- the *membership* mode (``--reconfig``, ``RunConfig(reconfig=True)``): the ensemble is reconfigurable
  and the workers connect to the members directly, following the configuration as applications do by
  default (``open_client``'s ``follow_ensemble``).  There is no proxy, so the proxy kinds
  (:data:`PROXY_FAULTS`) are left out; ``reconfig`` and the process and member faults apply.

Proxying the new members too (a proxy per worker for each member added, ``follow_ensemble=False``,
and the harness telling every worker to call ``update_hosts``) was not chosen: it would test a list
handed over by the application through a side channel of the harness, not the client following its
ensemble by itself, which is what an application gets by default, and the proxy faults gain nothing
from a reconfiguration that they do not already cover (a member that goes away is a connection loss).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

import zkwire
from zkwire.constants import OpCode
from zkwire.testing.base import ReconfigError, ZooKeeperStartError

from .fleet import Fleet, WorkerProc
from .members import Members
from .proxies import ProxySet

__all__ = [
    "FAULTS",
    "DEFAULT_WEIGHTS",
    "RECONFIG_WEIGHTS",
    "PROXY_FAULTS",
    "MAX_DURATION",
    "FaultContext",
    "Fault",
    "check_weights",
    "default_weights",
    "max_duration",
]

CREATE_OPS = (OpCode.CREATE, OpCode.CREATE2)


@dataclass
class FaultContext:
    fleet: Fleet
    proxies: list[ProxySet]
    members: Members
    rng: random.Random
    session_timeout: float
    lock_path: str
    counter_path: str
    #: A node the nemesis may write to load the ensemble.
    load_path: str | None = None

    @property
    def T(self) -> float:  # the session timeout, named as in the docs
        return self.session_timeout

    async def pick(self, prefer: tuple[str, ...] = ("holding",), p_prefer: float = 0.75) -> WorkerProc | None:
        """A live, running worker: with probability ``p_prefer`` one seen in a ``prefer`` state (waiting
        up to a second for one), else any."""
        if self.rng.random() < p_prefer:
            preferred = await self.fleet.wait_for(prefer, within=1.0)
            if preferred:
                return self.rng.choice(sorted(preferred, key=lambda w: w.worker))
        anyone = [w for w in self.fleet.live() if not w.stopped]
        return self.rng.choice(sorted(anyone, key=lambda w: w.worker)) if anyone else None

    async def aim(self, wp: WorkerProc, duration: float) -> None:
        """If ``wp`` holds the lock, ask it to keep holding through the fault (its holds are short)."""
        if wp.state == "holding":
            self.fleet.extend_hold(wp, time.monotonic() + duration + 0.5)
            await trio.sleep(0.02)  # let it read the request before it is hit

    async def holder(self) -> WorkerProc | None:
        """A worker seen holding the lock a moment ago (waiting up to two seconds for one)."""
        holders = await self.fleet.wait_for(("holding",), within=2.0)
        return self.rng.choice(sorted(holders, key=lambda w: w.worker)) if holders else None


Fault = Callable[[FaultContext], Awaitable[dict[str, Any] | None]]


async def _sleep(seconds: float) -> None:
    await trio.sleep(seconds)


# ------------------------------------------------------------------------------------------ network


async def sever(ctx: FaultContext) -> dict[str, Any] | None:
    """Close a worker's connections at the proxy (client side): it reconnects, same session."""
    wp = await ctx.pick()
    if wp is None:
        return None
    state = wp.state
    await ctx.aim(wp, 0.5)
    n = await ctx.proxies[wp.worker].sever()
    return {"target": wp.worker, "state": state, "severed": n}


async def _freeze(ctx: FaultContext, duration: float, to_server: bool, to_client: bool) -> dict[str, Any] | None:
    wp = await ctx.pick()
    if wp is None:
        return None
    ps = ctx.proxies[wp.worker]
    state = wp.state
    await ctx.aim(wp, duration)
    ps.freeze(to_server=to_server, to_client=to_client)
    try:
        await _sleep(duration)
    finally:
        ps.thaw()
    return {"target": wp.worker, "state": state, "duration": duration}


async def freeze_short(ctx: FaultContext) -> dict[str, Any] | None:
    """Both directions held, for less than the client's read timeout."""
    return await _freeze(ctx, ctx.rng.uniform(0.2, 0.5) * ctx.T, True, True)


async def freeze_long(ctx: FaultContext) -> dict[str, Any] | None:
    """Both directions held for longer than the session timeout: the session expires."""
    return await _freeze(ctx, ctx.rng.uniform(1.25, 1.75) * ctx.T, True, True)


async def oneway_out(ctx: FaultContext) -> dict[str, Any] | None:
    """Client->server traffic held (lost for the duration), server->client still flowing."""
    return await _freeze(ctx, ctx.rng.uniform(0.5, 1.5) * ctx.T, True, False)


async def oneway_in(ctx: FaultContext) -> dict[str, Any] | None:
    """Server->client traffic held, client->server still flowing (the server keeps the session)."""
    return await _freeze(ctx, ctx.rng.uniform(0.5, 1.5) * ctx.T, False, True)


async def refuse(ctx: FaultContext) -> dict[str, Any] | None:
    """Current connections severed and new ones reset on accept, for a while."""
    wp = await ctx.pick()
    if wp is None:
        return None
    ps = ctx.proxies[wp.worker]
    duration = ctx.rng.uniform(0.25, 1.25) * ctx.T
    state = wp.state
    await ctx.aim(wp, duration)
    ps.refuse(True)
    try:
        await ps.sever()
        await _sleep(duration)
    finally:
        ps.refuse(False)
    return {"target": wp.worker, "state": state, "duration": duration}


async def _armed(ctx: FaultContext, ps: ProxySet, rules: list[Any], window: float) -> dict[str, Any]:
    """Wait until one of ``rules`` fired and completed (or ``window`` passed); disarm the others."""
    fired = None
    try:
        with trio.move_on_after(window):
            while fired is None:
                fired = next((r for r in rules if r.matched.is_set()), None)
                if fired is None:
                    await trio.sleep(0.02)
            with trio.move_on_after(ctx.T):
                await fired.wait()
    finally:
        ps.disarm(rules)
    if fired is None:
        return {"fired": False}
    return {
        "fired": True,
        "member": rules.index(fired),
        "op": OpCode(fired.op).name if fired.op is not None else None,
        "path": fired.path,
        "session": fired.session_id,
        "created": fired.created_path,
        "reply_err": fired.reply.err if fired.reply is not None else None,
    }


async def swallow_create(ctx: FaultContext) -> dict[str, Any] | None:
    """The next lock-node create of a worker is applied but its reply is lost (connection severed)."""
    wp = await ctx.pick(prefer=("idle", "waiting", "releasing"))
    if wp is None:
        return None
    ps = ctx.proxies[wp.worker]
    rules = ps.swallow_reply(CREATE_OPS, ctx.lock_path)
    info = await _armed(ctx, ps, rules, window=3.0)
    return {"target": wp.worker, **info}


async def drop_request(ctx: FaultContext) -> dict[str, Any] | None:
    """One request of a worker is never forwarded; its connection is severed instead."""
    choices = [
        (CREATE_OPS, ctx.lock_path),
        ((OpCode.DELETE,), ctx.lock_path),
        ((OpCode.GET_CHILDREN, OpCode.GET_CHILDREN2), ctx.lock_path),
        ((OpCode.GET_DATA,), ctx.lock_path),
        ((OpCode.SET_DATA,), ctx.counter_path),
        ((OpCode.GET_DATA,), ctx.counter_path),
    ]
    ops, prefix = ctx.rng.choice(choices)
    wp = await ctx.pick(prefer=("holding", "waiting"))
    if wp is None:
        return None
    ps = ctx.proxies[wp.worker]
    await ctx.aim(wp, 1.0)
    rules = ps.drop_request(ops, prefix)
    info = await _armed(ctx, ps, rules, window=3.0)
    return {"target": wp.worker, "ops": [OpCode(o).name for o in ops], "prefix": prefix, **info}


# ------------------------------------------------------------------------------------------ processes


async def _pause(ctx: FaultContext, duration: float) -> dict[str, Any] | None:
    wp = await ctx.holder() or await ctx.pick()
    if wp is None:
        return None
    state = wp.state
    await ctx.aim(wp, duration)
    if not ctx.fleet.sigstop(wp):
        return None
    try:
        await _sleep(duration)
    finally:
        ctx.fleet.sigcont(wp)
    return {"target": wp.worker, "pid": wp.pid, "state": state, "duration": duration}


async def pause_short(ctx: FaultContext) -> dict[str, Any] | None:
    """SIGSTOP the holder for less than half the session timeout, then SIGCONT."""
    return await _pause(ctx, ctx.rng.uniform(0.2, 0.5) * ctx.T)


async def pause_long(ctx: FaultContext) -> dict[str, Any] | None:
    """SIGSTOP the holder past its session's life, then SIGCONT."""
    return await _pause(ctx, ctx.rng.uniform(1.25, 1.75) * ctx.T)


async def kill_holder(ctx: FaultContext) -> dict[str, Any] | None:
    """SIGKILL the holder; start the worker again (a new incarnation) after a moment."""
    wp = await ctx.holder() or await ctx.pick()
    if wp is None:
        return None
    state, pid = wp.state, wp.pid
    await ctx.aim(wp, 0.5)
    await ctx.fleet.kill(wp)
    pause = ctx.rng.uniform(0.2, 1.0)
    await _sleep(pause)
    new = await ctx.fleet.spawn(wp.worker)
    return {"target": wp.worker, "pid": pid, "state": state, "restarted_pid": new.pid, "pause": pause}


# ------------------------------------------------------------------------------------------ ensemble


async def kill_leader(ctx: FaultContext) -> dict[str, Any] | None:
    """SIGKILL the ensemble's leader (found with srvr); start it again after a pause."""
    leader = await ctx.members.find_leader(within=5.0)
    if leader is None:
        return None
    await ctx.members.kill(leader)
    down = ctx.rng.uniform(0.5, 2.0)
    try:
        await _sleep(down)
    finally:
        with trio.CancelScope(shield=True):
            await ctx.members.restart(leader)
    return {"target": f"member{leader}", "down": down}


async def pause_member(ctx: FaultContext) -> dict[str, Any] | None:
    """SIGSTOP a follower's JVM for a moment: it falls behind (or out of the quorum), then catches up."""
    leader = await ctx.members.find_leader(within=5.0)
    followers = [i for i in ctx.members.indices if i != leader and i not in ctx.members.paused]
    if leader is None or not followers:
        return None
    member = ctx.rng.choice(followers)
    duration = ctx.rng.uniform(0.3, 2.5)
    if ctx.members.pause(member) is None:
        return None
    try:
        await _sleep(duration)
    finally:
        ctx.members.resume(member)
    return {"target": f"member{member}", "duration": duration}


async def _load(ctx: FaultContext, member: int, writes: int) -> int:
    """Write the load node ``writes`` times through ``member`` (pipelined in batches): commits that a
    stopped member will have to apply before anything that comes after them."""
    if ctx.load_path is None:
        return 0
    host, port = ctx.members.address(member)
    done = 0
    with trio.move_on_after(4.0):
        async with zkwire.open_client(f"{host}:{port}", session_timeout=ctx.T) as zk:
            while done < writes:
                batch = min(50, writes - done)
                await zk.pipeline([zkwire.SetData(ctx.load_path, b"x") for _ in range(batch)])
                done += batch
    return done


async def swallow_create_lagging(ctx: FaultContext) -> dict[str, Any] | None:
    """A lost create reply, then a re-attach to a member that has not applied that create yet.

    A worker is asked to rest (start no acquire) for a moment, so that the last zxid its session saw
    is old; a follower it is not connected to is then stopped (SIGSTOP) and the ensemble is loaded
    with writes that the follower will have to apply before anything later; then the worker's next
    lock-node create is let through but its reply is swallowed (connection severed), and its
    reconnection is steered (proxy retarget) to the stopped follower, which is resumed a moment later.
    The follower accepts the session (it has seen everything the client had seen) and answers reads
    while it works through its backlog, in which the create sits behind the load.
    """
    wp = await ctx.pick(prefer=("idle", "waiting"), p_prefer=0.5)
    leader = await ctx.members.find_leader(within=5.0)
    if wp is None or leader is None:
        return None
    ps = ctx.proxies[wp.worker]
    pids = {i: await trio.to_thread.run_sync(ctx.members.pid, i) for i in ctx.members.indices}
    rest = ctx.rng.uniform(1.0, 2.0)
    ctx.fleet.request_idle(wp, time.monotonic() + rest)
    if not await ctx.fleet.wait_for_worker(wp, ("resting",), within=3.0):
        return None
    await _sleep(0.2)  # every member has applied what the worker saw last
    via = ps.connected_members()
    candidates = [i for i in ctx.members.indices if i not in (*via, leader) and pids.get(i)]
    candidates = candidates or [i for i in ctx.members.indices if i not in via and pids.get(i)]
    if not candidates:
        return None
    lagging = ctx.rng.choice(candidates)
    lag = ctx.rng.uniform(0.1, 0.6)
    rules: list[Any] = []
    fired: Any = None
    loaded = 0
    ctx.members.pause(lagging, pids[lagging])
    try:
        ps.retarget_all(lagging)
        loaded = await _load(ctx, leader, ctx.rng.randrange(100, 600))
        rules = ps.swallow_reply(CREATE_OPS, ctx.lock_path)
        with trio.move_on_after(rest + 3.0):
            while fired is None:
                fired = next((r for r in rules if r.matched.is_set()), None)
                if fired is None:
                    await trio.sleep(0.005)
        if fired is not None:
            with trio.move_on_after(ctx.T):
                await fired.wait()
            await _sleep(lag)
    finally:
        ps.disarm(rules)
        ctx.members.resume(lagging)
        with trio.CancelScope(shield=True):
            await _sleep(1.0)  # the re-attach happens now, to the member catching up
            ps.restore_targets()
    return {
        "target": wp.worker,
        "fired": fired is not None,
        "via": via,
        "lagging": f"member{lagging}",
        "lag": lag,
        "rest": rest,
        "load": loaded,
        "session": None if fired is None else fired.session_id,
        "created": None if fired is None else fired.created_path,
    }


# ------------------------------------------------------------------------------------------ membership


async def reconfig(ctx: FaultContext) -> dict[str, Any] | None:
    """Remove a member (the leader, a lock holder's member, or another), then add a fresh one (back to 3).

    The member removed is, at random: the leader (the leadership moves and every member drops its
    clients for a moment), the member a lock holder's session is on (the holder is asked to keep holding
    through the change: its session has to move while it holds), or a follower.  The removed member is
    either stopped at once or left running for a moment first (a removed follower keeps serving its
    clients, which hear the new configuration and move by themselves).  After a short pause with two
    members, a fresh server (the next index, new ports) is added; about a third of the sessions then
    move to it, spread over the client's ``move_spread``.  Whatever happens, the ``finally`` stops the
    removed member and adds members until the ensemble has its first size again.
    """
    m = ctx.members
    if not m.reconfigurable or m.size < m.target_size or m.paused:
        return None
    leader = await m.find_leader(within=5.0)
    if leader is None:
        return None
    aim = ctx.rng.choices(("leader", "holder", "other"), weights=(1.0, 2.0, 1.0))[0]
    target: int | None = None
    holder: WorkerProc | None = None
    if aim == "holder":
        holder = await ctx.holder()
        on = [m.member_of(h) for h in (holder.holding_servers() if holder is not None else [])]
        candidates = [i for i in on if i is not None and i in m.indices]
        if holder is not None and candidates:
            target = candidates[0]
            await ctx.aim(holder, 4.0)
        else:
            aim, holder = "other", None
    if aim == "leader":
        target = leader
    elif aim == "other":
        target = ctx.rng.choice([i for i in m.indices if i != leader])
    assert target is not None
    linger = 0.0 if ctx.rng.random() < 0.5 else ctx.rng.uniform(0.5, 2.0)
    between = ctx.rng.uniform(0.2, 1.5)
    info: dict[str, Any] = {
        "target": f"member{target}",
        "aim": aim,
        "was_leader": target == leader,
        "holder": None if holder is None else holder.worker,
        "linger": linger,
        "between": between,
    }
    t0 = time.monotonic()
    try:
        await m.remove(target, within=20.0)
        info["remove_s"] = time.monotonic() - t0
        await _sleep(linger)
        await m.stop_removed(target)
        await _sleep(between)
        t1 = time.monotonic()
        info["added"] = f"member{await m.add(within=30.0)}"
        info["add_s"] = time.monotonic() - t1
    except (ReconfigError, ZooKeeperStartError) as e:
        info["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(90):
            healed = await m.restore_membership(within=30.0)
            if healed:
                info["added_in_heal"] = [f"member{i}" for i in healed]
    info["members"] = m.indices
    return info


FAULTS: dict[str, Fault] = {
    "sever": sever,
    "freeze_short": freeze_short,
    "freeze_long": freeze_long,
    "oneway_out": oneway_out,
    "oneway_in": oneway_in,
    "refuse": refuse,
    "swallow_create": swallow_create,
    "swallow_create_lagging": swallow_create_lagging,
    "drop_request": drop_request,
    "pause_short": pause_short,
    "pause_long": pause_long,
    "kill_holder": kill_holder,
    "kill_leader": kill_leader,
    "pause_member": pause_member,
    "reconfig": reconfig,
}

#: The longest each kind may take, as (multiple of T, seconds): the scheduler starts a fault only if
#: it can end before the deadline.  Target searches take up to 2 s; a member restart up to ~10 s.
MAX_DURATION: dict[str, tuple[float, float]] = {
    "sever": (0.0, 1.5),
    "freeze_short": (0.5, 1.0),
    "freeze_long": (1.75, 1.0),
    "oneway_out": (1.5, 1.0),
    "oneway_in": (1.5, 1.0),
    "refuse": (1.25, 1.5),
    "swallow_create": (1.0, 4.0),
    "swallow_create_lagging": (1.0, 12.0),
    "drop_request": (1.0, 4.0),
    "pause_short": (0.5, 2.0),
    "pause_long": (1.75, 2.0),
    "kill_holder": (0.0, 3.5),
    "kill_leader": (0.0, 12.0),
    "pause_member": (0.0, 3.0),
    "reconfig": (0.0, 10.0),
}


def max_duration(kind: str, session_timeout: float) -> float:
    k, c = MAX_DURATION[kind]
    return k * session_timeout + c


#: Relative frequencies.  The ensemble faults are rarer: they hit every worker at once and a restart
#: costs seconds.
DEFAULT_WEIGHTS: dict[str, float] = {
    "sever": 1.0,
    "freeze_short": 1.0,
    "freeze_long": 1.0,
    "oneway_out": 1.0,
    "oneway_in": 0.5,
    "refuse": 0.75,
    "swallow_create": 1.5,
    "swallow_create_lagging": 1.0,
    "drop_request": 1.0,
    "pause_short": 1.0,
    "pause_long": 1.0,
    "kill_holder": 1.0,
    "kill_leader": 0.4,
    "pause_member": 0.5,
}

#: The kinds that act through the workers' fault proxies: left out when workers connect directly.
PROXY_FAULTS = frozenset(
    {
        "sever",
        "freeze_short",
        "freeze_long",
        "oneway_out",
        "oneway_in",
        "refuse",
        "swallow_create",
        "swallow_create_lagging",
        "drop_request",
    }
)

#: Relative frequencies in the membership mode (workers connect directly and follow the ensemble):
#: the kinds that need no proxy, and ``reconfig``.
RECONFIG_WEIGHTS: dict[str, float] = {
    "reconfig": 2.0,
    "pause_short": 1.0,
    "pause_long": 1.0,
    "kill_holder": 1.0,
    "kill_leader": 0.4,
    "pause_member": 0.5,
}


def default_weights(membership: bool) -> dict[str, float]:
    """The default weights of a mode: ``membership`` (reconfigurable ensemble, direct connections) or not."""
    return dict(RECONFIG_WEIGHTS if membership else DEFAULT_WEIGHTS)


def check_weights(weights: dict[str, float], membership: bool) -> None:
    """Refuse fault kinds that the mode cannot apply (ValueError naming them)."""
    unknown = set(weights) - set(FAULTS)
    if unknown:
        raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(sorted(FAULTS))}")
    active = {k for k, w in weights.items() if w > 0}
    if membership and active & PROXY_FAULTS:
        raise ValueError(
            f"{sorted(active & PROXY_FAULTS)} act through the fault proxies, which the membership mode "
            "(--reconfig) has none of: workers connect to the members directly"
        )
    if not membership and "reconfig" in active:
        raise ValueError("the reconfig fault needs the membership mode (--reconfig)")

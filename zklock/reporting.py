"""The locks' events, reported to the client's observers (:class:`zkwire.observing.RecipeEvent`).

A lock reports, for each acquire: ``queued`` (its node is in the queue), then ``granted`` (with the
wait since the acquire began and the lease's fencing token) or ``abandoned`` (cancelled, failed, or not
granted without blocking: with the wait); for each lease: ``released`` (with the time held) or ``lost``
(with the time held, why, and the margin: how long before the servers could expire the session the
holder was told -- :attr:`zkwire.Client.expiry_deadline` minus the moment of telling).

Nothing is made unless some observer is attached to the client (:attr:`zkwire.Client.observed`).
Durations come from trio's clock; the event's ``at`` is wall-clock time.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

import trio

from zkwire import Client
from zkwire.observing import RecipeEvent

__all__ = ["AcquireReport", "report"]


def report(
    client: Client,
    recipe: str | None,
    kind: str,
    path: str,
    *,
    context: Any = None,
    **figures: Any,
) -> None:
    """Hand one event to ``client``'s observers (nothing when none is attached, or ``recipe`` is None:
    a lock inside another recipe, such as a semaphore's guard, reports nothing of its own)."""
    if recipe is None or not client.observed:
        return
    client.report(RecipeEvent(recipe, kind, path, client.session_id, time.time(), context=context, **figures))


class AcquireReport:
    """One acquire's reporting: when it began and in which context (the caller's, for a trace's span)."""

    __slots__ = ("client", "context", "path", "queued", "recipe", "started")

    def __init__(self, client: Client, recipe: str | None, path: str) -> None:
        self.client = client
        self.recipe = recipe
        self.path = path
        self.started = trio.current_time()
        self.context = contextvars.copy_context() if recipe is not None and client.observed else None
        self.queued = False

    def waited(self) -> float:
        return trio.current_time() - self.started

    def node_queued(self) -> None:
        """The acquire's node is in the queue (reported once)."""
        if not self.queued:
            self.queued = True
            report(self.client, self.recipe, "queued", self.path, context=self.context)

    def granted(self, token: int) -> None:
        report(self.client, self.recipe, "granted", self.path, context=self.context, wait=self.waited(), token=token)

    def abandoned(self) -> None:
        report(self.client, self.recipe, "abandoned", self.path, context=self.context, wait=self.waited())

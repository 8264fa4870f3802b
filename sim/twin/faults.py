"""The Machines API's own faults (Toxiproxy's idea, inside the twin), drawn per request from the seed.

A scenario's ``[api]`` table (``sim.config.scenario.ApiTable``) sets each fault's share.
Each request the world takes draws its fault here, on the world's thread, in the order
the world takes them, from a stream of its own derived from the run's seed: the same seed
and the same requests give the same faults, and the world's own draws never shift. With
every share and the latency 0 nothing is drawn and nothing changes.

Fly publishes no rate, latency or wording of any of these faults: not public, assumed.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any, Literal

from platform_testbed.sim.config.scenario import ApiTable

__all__ = ["CLOSED", "Draw", "Faults", "RequestKind", "error_body", "request_kind"]

#: The status logged for a request whose connection the twin closed unanswered (nginx's 444).
CLOSED = 444
#: What a request is, for the faults that only some requests can have.
RequestKind = Literal["wait", "read", "lease", "other"]
FaultKind = Literal["error", "throttle", "reset", "wait_drop", "stale", "lease_held"]
#: Not public: assumed. Each fault's words, in Fly's error body (OpenAPI ``ErrorResponse``).
_WORDS = {500: "internal server error", 502: "bad gateway", 503: "service unavailable",
          504: "gateway timeout", 429: "rate limit exceeded: retry later"}
#: The fault that only each kind of request can have.
_OWN: dict[RequestKind, FaultKind | None] = {
    "wait": "wait_drop", "read": "stale", "lease": "lease_held", "other": None}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    """Fly's error body (OpenAPI ``ErrorResponse``: ``error`` and ``status``)."""
    return {"error": message or _WORDS.get(status, "error"), "status": "unknown"}


def request_kind(method: str, machine_id: str | None, action: str | None) -> RequestKind:
    """Which of the kind-bound faults a request can have (``/wait``, a read, a lease's take)."""
    if method == "GET" and action == "wait":
        return "wait"
    if method == "GET" and action is None:
        return "read"  # the machines or one machine (and the app: a read like them)
    if method == "POST" and action == "lease" and machine_id is not None:
        return "lease"
    return "other"


@dataclass(frozen=True, slots=True)
class Draw:
    """One request's fault (None: it is answered as it would be) and its latency (world s).

    ``drop_at`` is the point of a dropped wait's timeout (0 to 1) at which it drops.
    """

    fault: FaultKind | None = None
    latency_s: float = 0.0
    drop_at: float = 0.0


_NONE = Draw()


def fault_seed(seed: int) -> int:
    """The faults' own stream's seed, from the run's: a world's draws never move for them."""
    return int.from_bytes(hashlib.sha256(f"api-faults:{seed}".encode()).digest()[:8], "big")


class Faults:
    """``table``'s faults for the run of ``seed``: one ``draw`` per request, in order."""

    def __init__(self, table: ApiTable, seed: int) -> None:
        self.table = table
        self._rng = random.Random(fault_seed(seed))
        self._shares: tuple[tuple[FaultKind, float], ...] = (
            ("error", table.error_share), ("throttle", table.throttle_share),
            ("reset", table.reset_share))
        self._own: dict[FaultKind, float] = {"wait_drop": table.wait_drop_share, "stale": table.stale_share,
                     "lease_held": table.lease_held_share}
        self._any_share = any(s > 0 for _k, s in self._shares) or any(v > 0 for v in self._own.values())
        #: Whether any request can have a fault or a latency: if not, none is drawn.
        self.active = self._any_share or table.latency_s > 0 or table.jitter_s > 0
        self.drawn = 0

    def draw(self, kind: RequestKind) -> Draw:
        """The next request's fault: one uniform number picks it (the shares lie end to end),
        one more the drop point of a dropped wait, one more the latency's jitter."""
        if not self.active:
            return _NONE
        self.drawn += 1
        rng, table = self._rng, self.table
        fault: FaultKind | None = None
        drop_at = 0.0
        if self._any_share:
            u = rng.random()
            edge = 0.0
            own = _OWN[kind]
            shares: list[tuple[FaultKind, float]] = [*self._shares]
            if own is not None:
                shares.append((own, self._own[own]))
            for name, share in shares:
                edge += share
                if u < edge:
                    fault = name
                    break
            if fault == "wait_drop":
                drop_at = rng.random()
        latency = table.latency_s
        if table.jitter_s > 0:
            latency = max(0.0, latency + rng.uniform(-table.jitter_s, table.jitter_s))
        return Draw(fault, latency, drop_at)

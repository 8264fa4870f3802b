"""The site as its users see it: which release is live, and what each request gets."""

from __future__ import annotations

import itertools
import math
import operator
import random
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sim.platform.machine import Flip, Machine
from sim.publish.clock import Clock

SERVED, NOT_FOUND, BAD_GATEWAY = "served", "not_found", "bad_gateway"
# Machine states in which the machine is neither up nor on its way up.
DOWN_STATES = frozenset({"stopped", "failed", "destroyed"})


@dataclass(frozen=True, slots=True)
class SiteTally:
    """What the traffic got from the publish onwards, and how long the site served 404."""

    requests: int
    served: int
    not_found: int
    bad_gateway: int
    down_s: float


class Site:
    """Routing rule: no live release → 404; a live one with a started machine → served; else 502.

    The site is a timeline of intervals with one outcome each; requests are drawn
    afterwards against it, so traffic costs no simulated process per request.
    """

    def __init__(self, env: Clock, live: str | None) -> None:
        self.env = env
        self.live = live
        self.ever_live = live is not None
        self._started: set[str] = set()
        self.segments: list[tuple[float, str]] = [(env.now, self._outcome())]

    def machine_changed(self, machine: Machine) -> None:
        """Hook for machines: keep the count of started machines and the timeline current."""
        started = self._started
        if machine.state == "started":
            started.add(machine.id)
        else:
            started.discard(machine.id)
        # _mark, inlined: machines call this on every state change.
        outcome = NOT_FOUND if self.live is None else (SERVED if started else BAD_GATEWAY)
        if outcome != self.segments[-1][1]:
            self.segments.append((self.env.now, outcome))

    def set_live(self, release: str | None) -> None:
        """Mark a release live (or none: the site serves 404)."""
        self.live = release
        self.ever_live = self.ever_live or release is not None
        self._mark()

    def _outcome(self) -> str:
        if self.live is None:
            return NOT_FOUND
        return SERVED if self._started else BAD_GATEWAY

    def _mark(self) -> None:
        outcome = self._outcome()
        if outcome != self.segments[-1][1]:
            self.segments.append((self.env.now, outcome))

    def finalize(self) -> None:
        """The run is over: make ``segments`` complete (nothing to do for a live site)."""

    def tally(self, start_s: float, end_s: float, rps: float, rng: random.Random) -> SiteTally:
        """Draw Poisson arrivals over [start_s, end_s) and classify each by the timeline."""
        counts = {SERVED: 0, NOT_FOUND: 0, BAD_GATEWAY: 0}
        bounds = [*self.segments, (end_s, "")]
        if rps > 0:
            index = 0
            t = start_s + rng.expovariate(rps)
            while t < end_s:
                while bounds[index + 1][0] <= t:
                    index += 1
                counts[bounds[index][1]] += 1
                t += rng.expovariate(rps)
        return self._tally(counts, bounds, start_s, end_s)

    def tally_seeded(self, start_s: float, end_s: float, rps: float, seed: int) -> SiteTally:
        """``tally`` with ``random.Random(seed)`` as the stream, counted per segment at once.

        Gives the same counts as ``tally(..., random.Random(seed))`` but costs a few
        array operations instead of a Python step per request.
        """
        segments = self.segments
        ends = [begin for begin, _ in segments[1:]]
        ends.append(end_s)
        before = arrivals_before(seed, rps, start_s, end_s, ends) if rps > 0 else [0] * len(ends)
        counts = {SERVED: 0, NOT_FOUND: 0, BAD_GATEWAY: 0}
        down_s = 0.0
        live_seen = False
        previous = 0
        # One pass: requests per segment, and 404 time once the site had been up (as _tally).
        for (begin, outcome), finish, upto in zip(segments, ends, before, strict=True):
            counts[outcome] += upto - previous
            previous = upto
            if outcome != NOT_FOUND:
                live_seen = True
            elif live_seen:
                lo = begin if begin > start_s else start_s
                hi = finish if finish < end_s else end_s
                if hi > lo:
                    down_s += hi - lo
        return SiteTally(
            requests=previous,
            served=counts[SERVED],
            not_found=counts[NOT_FOUND],
            bad_gateway=counts[BAD_GATEWAY],
            down_s=round(down_s, 3),
        )

    def _tally(
        self, counts: dict[str, int], bounds: list[tuple[float, str]], start_s: float, end_s: float
    ) -> SiteTally:
        down_s = 0.0
        live_seen = False
        for (begin, outcome), (finish, _) in itertools.pairwise(bounds):
            live_seen = live_seen or outcome != NOT_FOUND
            lo, hi = max(begin, start_s), min(finish, end_s)
            # 404s count as downtime only once the site had been up: a first publish's
            # wait is not an outage.
            if hi > lo and outcome == NOT_FOUND and live_seen:
                down_s += hi - lo
        return SiteTally(
            requests=sum(counts.values()),
            served=counts[SERVED],
            not_found=counts[NOT_FOUND],
            bad_gateway=counts[BAD_GATEWAY],
            down_s=round(down_s, 3),
        )


class DeferredSite(Site):
    """A site of lazy machines: changes arrive out of time order, the timeline is built last.

    Lazy machines append to ``flips`` when they become started (+1) or stop being so
    (-1), at their own change time; ``finalize`` replays those and the live changes in
    time order into the same segments a live site would have (up to zero-length ones,
    which carry no requests and no downtime).
    """

    def __init__(self, env: Clock, live: str | None) -> None:
        super().__init__(env, live)
        self._live_at_start = live is not None
        self.flips: list[Flip] = []
        self._live_changes: list[tuple[float, str | None]] = []

    def machine_changed(self, machine: Machine) -> None:
        """Lazy machines report through ``flips``; a hook call has nothing to add."""

    def set_live(self, release: str | None) -> None:
        """Record the live release change at the current time."""
        self.live = release
        self.ever_live = self.ever_live or release is not None
        self._live_changes.append((self.env.now, release))

    def finalize(self) -> None:
        """Replay machine and live changes in time order into ``segments``."""
        # (time, +1/-1 started, live flag or None); sorted by time only, stably: changes
        # at one instant can only make zero-length segments.
        changes = self.flips + [(t, 0, name is not None) for t, name in self._live_changes]
        changes.sort(key=operator.itemgetter(0))
        segments = self.segments[:1]
        last = segments[0][1]
        live = self._live_at_start
        started = 0
        for t, delta, now_live in changes:
            if now_live is None:
                started += delta
            else:
                live = now_live
            outcome = NOT_FOUND if not live else (SERVED if started else BAD_GATEWAY)
            if outcome != last:
                segments.append((t, outcome))
                last = outcome
        self.segments = segments


# Arrival streams drawn in one go, kept for the other checks of the same world (and the
# other points of a sweep that share its seed and traffic): (seed, rps, start, end) ->
# arrival times, the exact ones when ``exact``.
Times = npt.NDArray[np.float64]
StreamKey = tuple[int, float, float, float]


class _KeptStreams(OrderedDict[StreamKey, tuple[Times, bool]]):
    """The kept streams, oldest first, with their total length kept current.

    Summing the lengths of all kept streams on every new stream cost more than
    some of the draws themselves.
    """

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __setitem__(self, key: StreamKey, value: tuple[Times, bool]) -> None:
        old = self.get(key)
        if old is not None:
            self.total -= len(old[0])
        super().__setitem__(key, value)
        self.total += len(value[0])

    def popitem(self, last: bool = True) -> tuple[StreamKey, tuple[Times, bool]]:
        item = super().popitem(last)
        self.total -= len(item[1][0])
        return item

    def clear(self) -> None:
        super().clear()
        self.total = 0


_STREAMS = _KeptStreams()
_STREAMS_KEPT = 64
# A longer stream is counted in constant memory instead; and all kept streams together
# stay under this many arrival times (8 bytes each).
_STREAM_MAX_KEPT = 1 << 20
_STREAMS_MAX_TOTAL = 1 << 22
_NUMPY_MT = np.random.RandomState()
# Uniforms drawn for a stream: enough for all but ~1 in 2,000 streams (3 sigma above the
# mean, plus a few); a stream that runs out is drawn again, twice as long. Every uniform
# costs its log and its step of the running sum, so a wider margin costs every world.
_MARGIN_SIGMAS = 3.0
_MARGIN_EXTRA = 16
# Sweeps may run worlds in threads (Dask without processes): the shared generator and
# the kept streams are used under this lock.
_LOCK = threading.Lock()


def arrivals_before(
    seed: int, rps: float, start_s: float, end_s: float, bounds: Sequence[float]
) -> list[int]:
    """How many arrivals of the stream fall before each bound (bounds ascending, last end_s).

    The stream is the one ``tally`` draws from ``random.Random(seed)``: ``t = start_s``,
    then ``t += rng.expovariate(rps)`` while ``t < end_s``. NumPy's legacy Mersenne
    Twister, seeded with the same key, yields the very same uniforms; only ``log`` may
    differ in the last bits, so a count is trusted only when no arrival lies within a
    proven error bound of any bound, and otherwise the stream is redrawn exactly.
    """
    with _LOCK:
        return _arrivals_before(seed, rps, start_s, end_s, bounds)


def _arrivals_before(
    seed: int, rps: float, start_s: float, end_s: float, bounds: Sequence[float]
) -> list[int]:
    key = (seed, rps, start_s, end_s)
    kept = _STREAMS.get(key)
    if kept is None:
        expected = rps * max(end_s - start_s, 0.0)
        if expected + 10 * math.sqrt(expected) + 64 > _STREAM_MAX_KEPT:
            return _counts_streamed(seed, rps, start_s, end_s, bounds)
        kept = _draw(seed, rps, start_s, end_s)
        _STREAMS[key] = kept
        while len(_STREAMS) > 1 and (
            len(_STREAMS) > _STREAMS_KEPT or _STREAMS.total > _STREAMS_MAX_TOTAL
        ):
            _STREAMS.popitem(last=False)
    else:
        _STREAMS.move_to_end(key)
    times, exact = kept
    at = np.asarray(bounds, dtype=np.float64)
    if not exact:
        clear = _clear_counts(times, at, rps, end_s)
        if clear is not None:
            return clear
        # An arrival too near a bound to trust the fast draw's last bits: draw exactly.
        kept = (_exact_times(seed, rps, start_s, end_s), True)
        _STREAMS[key] = kept
        times = kept[0]
    counts: list[int] = times.searchsorted(at).tolist()
    return counts


def _numpy_seedable(seed: int) -> bool:
    # CPython seeds with the 32-bit words of the int; NumPy reads a one-word key as a
    # plain int and seeds differently, so only two-word (and longer) keys agree.
    return seed >= 1 << 32


def _seed_numpy(seed: int) -> None:
    words = []
    while seed:
        words.append(seed & 0xFFFFFFFF)
        seed >>= 32
    _NUMPY_MT.seed(np.array(words, dtype=np.uint32))


def _step_error(rps: float, end_s: float) -> float:
    # Per arrival: NumPy's log is within 2 ulp of libm's (4 allowed), and each running
    # sum may round differently by 1 ulp of the time (2 allowed); errors add up.
    # (math.ulp is np.spacing for positive floats, without NumPy's per-call cost.)
    largest_gap = 40.0 / rps  # -log(2**-53) < 37
    return 4 * math.ulp(largest_gap) + 2 * math.ulp(max(abs(end_s), 1.0))


def _clear_counts(times: Times, at: Times, rps: float, end_s: float) -> list[int] | None:
    """Arrivals before each bound, or None if an arrival lies within the error bound of one.

    With no arrival in [bound - slack, bound + slack], the count below ``bound - slack``
    is the count below ``bound`` whatever the last bits of the times.
    """
    # One bound for all: the error after the last arrival kept is the largest.
    slack = (len(times) + 2) * _step_error(rps, end_s) + 1e-12
    below = times.searchsorted(at - slack, side="left")
    upto = times.searchsorted(at + slack, side="right")
    if (below != upto).any():
        return None
    counts: list[int] = below.tolist()
    return counts


def _draw(seed: int, rps: float, start_s: float, end_s: float) -> tuple[Times, bool]:
    """The stream's arrival times below end_s, fast (NumPy) where the seed allows."""
    if not _numpy_seedable(seed):
        return _exact_times(seed, rps, start_s, end_s), True
    expected = rps * max(end_s - start_s, 0.0)
    size = max(1, int(expected + _MARGIN_SIGMAS * math.sqrt(expected) + _MARGIN_EXTRA))
    while True:
        _seed_numpy(seed)
        times = _NUMPY_MT.random_sample(size)
        # -log(1.0 - u) / rps and the running sum, in place, in the scalar code's order.
        np.subtract(1.0, times, out=times)
        np.log(times, out=times)
        # (-x) / rps and x / (-rps) are the same IEEE result: one pass fewer.
        np.divide(times, -rps, out=times)
        times[0] += start_s
        # cumsum adds in order, like the running sum it replaces.
        np.cumsum(times, out=times)
        if times[-1] >= end_s:
            # The arrivals past end_s stay: the first of them shows none near end_s is lost.
            return times, False
        size *= 2


def _exact_times(seed: int, rps: float, start_s: float, end_s: float) -> Times:
    """The stream drawn step by step as ``tally`` draws it."""
    rng = random.Random(seed)
    draw = rng.random
    log = math.log
    out = []
    # Inlined expovariate: -log(1.0 - random()) / rps, added in the same order.
    t = start_s + -log(1.0 - draw()) / rps
    while t < end_s:
        out.append(t)
        t += -log(1.0 - draw()) / rps
    out.append(t)
    return np.array(out, dtype=np.float64)


def _counts_streamed(
    seed: int, rps: float, start_s: float, end_s: float, bounds: Sequence[float]
) -> list[int]:
    """Counts for a stream too long to keep, drawn step by step in constant memory."""
    rng = random.Random(seed)
    draw = rng.random
    log = math.log
    counts = [0] * len(bounds)
    index = 0
    seen = 0
    t = start_s + -log(1.0 - draw()) / rps
    while t < end_s:
        while bounds[index] <= t:
            counts[index] = seen
            index += 1
        seen += 1
        t += -log(1.0 - draw()) / rps
    for rest in range(index, len(bounds)):
        counts[rest] = seen
    return counts

"""Open-loop traffic: how many requests fall in each segment of a timeline.

Requests form a Poisson process of rate ``rps``; the counts in disjoint segments are
independent Poisson draws with mean ``rps x length``. Both the publish site and the
rollout's balancer draw them here: one seeded NumPy draw for all segments of a run, so
traffic costs a few array operations however many requests there are.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # NumPy (about 100 ms) loads with the first draw: a world without traffic never pays
    import numpy as np

_KEY_MASK = 2**128 - 1


def generator(seed: int) -> np.random.Generator:
    """The traffic's own random stream for one run (never shared with the model's).

    Philox keyed directly by the seed (a counter-based generator: the key alone fixes
    the whole stream), so no SeedSequence hashing of the seed.
    """
    import numpy as np  # noqa: PLC0415 -- see the imports

    return np.random.Generator(np.random.Philox(key=seed & _KEY_MASK))


class _Rekeyed:
    """One Philox generator, re-keyed per draw: the same stream as ``generator(seed)``.

    Making a NumPy bit generator costs more than the whole traffic draw of a small run
    (measured: ``generator(seed)`` 11-18 us, re-keying this one 1-2 us, on the
    incident world); a Philox stream is a pure function of its key and counter, so
    setting both gives exactly the stream a fresh ``generator(seed)`` would. The lock
    keeps two threads from drawing from it at once.
    """

    def __init__(self) -> None:
        self._bits: Any = None  # made at the first draw (NumPy loads then)
        self._rng: np.random.Generator | None = None
        self.lock = threading.Lock()

    def keyed(self, seed: int) -> np.random.Generator:
        """The generator at the start of ``seed``'s stream (call with ``lock`` held)."""
        rng = self._made()
        key = seed & _KEY_MASK
        state: dict[str, Any] = {
            "bit_generator": "Philox",
            "state": {"counter": [0, 0, 0, 0], "key": [key & (2**64 - 1), key >> 64]},
            "buffer": [0, 0, 0, 0],
            "buffer_pos": 4,
            "has_uint32": 0,
            "uinteger": 0,
        }
        self._bits.state = cast(Any, state)  # numpy types it as arrays; lists work
        return rng

    def _made(self) -> np.random.Generator:
        """The one generator, made at the first draw (NumPy is imported then)."""
        if self._rng is None:
            import numpy as np  # noqa: PLC0415 -- see the imports

            self._bits = np.random.Philox(key=0)
            self._rng = np.random.Generator(self._bits)
        return self._rng

    def state(self) -> Any:
        """The stream's state now (for ``at``; call with ``lock`` held)."""
        self._made()
        return self._bits.state

    def at(self, state: Any) -> np.random.Generator:
        """The generator at a state ``state`` gave (call with ``lock`` held)."""
        rng = self._made()
        self._bits.state = state
        return rng


_REKEYED = _Rekeyed()


#: Per (seed, mean): the Poisson total and the stream's state just after it. A sweep's
#: points share their seeds and mostly their traffic's span, so they draw the same total;
#: kept, a world sets the state and draws only the split. Emptied when full.
_TOTALS: dict[tuple[int, float], tuple[int, Any]] = {}
_TOTALS_MAX = 4096


def requests_per_segment(seed: int, rps: float, lengths_s: Sequence[float]) -> list[int]:
    """Poisson request counts for consecutive segments of the given lengths (seconds).

    Drawn from ``generator(seed)``'s stream as the total over all segments (Poisson)
    split among them in proportion to their lengths (multinomial): the same
    distribution as one Poisson draw per segment, and every run of one world with one
    seed gets the same total, however a check cut the timeline into segments.
    """
    total_s = float(sum(length for length in lengths_s if length > 0))
    if rps <= 0 or total_s <= 0:
        return [0] * len(lengths_s)
    mean = rps * total_s
    positive = [i for i, length in enumerate(lengths_s) if length > 0]
    with _REKEYED.lock:
        kept = _TOTALS.get((seed, mean))
        if kept is None:
            rng = _REKEYED.keyed(seed)
            requests = int(rng.poisson(mean))
            if len(_TOTALS) >= _TOTALS_MAX:
                _TOTALS.clear()
            _TOTALS[(seed, mean)] = (requests, _REKEYED.state())
        else:
            requests = kept[0]
        if len(lengths_s) == 1:
            return [requests]
        if len(positive) == 1:
            # One segment holds all the time: the multinomial gives it every request
            # (binomial(n, 1) = n, binomial(n, 0) = 0), whatever the stream.
            counts = [0] * len(lengths_s)
            counts[positive[0]] = requests
            return counts
        if kept is not None:
            rng = _REKEYED.at(kept[1])
        shares = [max(length, 0.0) / total_s for length in lengths_s]
        drawn: list[int] = rng.multinomial(requests, shares).tolist()
    return drawn

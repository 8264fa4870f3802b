"""Traffic draws: a Poisson process's counts per segment, seeded, the same from any thread."""

from __future__ import annotations

import statistics
import threading

from hypothesis import given
from hypothesis import strategies as st

from platform_testbed.sim.platform.traffic import generator, requests_per_segment


@given(seed=st.integers(0, 2**64 - 1), rps=st.floats(0.1, 500), lengths=st.lists(
    st.floats(0.0, 1_000.0), min_size=1, max_size=6))
def test_the_rekeyed_draw_is_the_fresh_generators_stream(seed, rps, lengths):
    """requests_per_segment gives what a fresh generator(seed) draws: Poisson total, multinomial split."""
    counts = requests_per_segment(seed, rps, lengths)
    expected = _fresh(seed, rps, lengths)
    assert counts == expected
    assert all(n == 0 for n, length in zip(counts, lengths, strict=True) if length <= 0)


def _fresh(seed: int, rps: float, lengths: list[float]) -> list[int]:
    """What a fresh generator(seed) draws: the Poisson total, then its multinomial split."""
    total_s = sum(length for length in lengths if length > 0)
    if total_s <= 0:
        return [0] * len(lengths)
    rng = generator(seed)
    total = int(rng.poisson(rps * total_s))
    return [total] if len(lengths) == 1 else rng.multinomial(
        total, [max(length, 0.0) / total_s for length in lengths]).tolist()


@given(seed=st.integers(0, 2**64 - 1), rps=st.floats(0.1, 500), lengths=st.lists(
    st.sampled_from([0.0, 0.5, 3.0, 100.0]), min_size=2, max_size=4),
    other=st.permutations([0, 1, 2, 3]))
def test_a_kept_total_gives_the_fresh_generators_split(seed, rps, lengths, other):
    """A second world of the seed with the same span (its Poisson total kept) is split as a
    fresh generator(seed) splits it, however its segments lie (one with all the time too)."""
    again = [lengths[i] for i in other if i < len(lengths)]
    if sum(again) != sum(lengths):  # a different float sum: not the same span
        return
    requests_per_segment(seed, rps, lengths)
    assert requests_per_segment(seed, rps, again) == _fresh(seed, rps, again)


def test_counts_follow_a_poisson_process():
    """Over many seeds each segment's count has mean and variance rps x length (Poisson)."""
    rps, lengths = 5.0, [10.0, 40.0, 150.0]
    draws = [requests_per_segment(seed, rps, lengths) for seed in range(4_000)]
    for i, length in enumerate(lengths):
        column = [d[i] for d in draws]
        mean = rps * length
        # 6 standard errors of the mean; the variance within 15 % (4,000 draws).
        assert abs(statistics.fmean(column) - mean) < 6 * (mean / len(column)) ** 0.5
        assert abs(statistics.pvariance(column) / mean - 1) < 0.15


def test_draws_from_threads_equal_draws_in_turn():
    """The shared re-keyed generator is locked: concurrent draws give the sequential results."""
    seeds = list(range(400))
    alone = {s: requests_per_segment(s, 20.0, [3.0, 7.0]) for s in seeds}
    seen: dict[int, list[int]] = {}

    def work(part: list[int]) -> None:
        for s in part:
            seen[s] = requests_per_segment(s, 20.0, [3.0, 7.0])

    threads = [threading.Thread(target=work, args=(seeds[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == alone

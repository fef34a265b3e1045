"""The caches queries share hold their limit and survive concurrent episodes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from netarena.k8s.bounded import BoundedCache


def test_the_oldest_entry_goes_first_and_setdefault_builds_once() -> None:
    cache: BoundedCache[int, list[int]] = BoundedCache(2)
    first = cache.setdefault(1, list)
    assert cache.setdefault(1, list) is first
    cache.put(2, [2])
    cache.put(3, [3])
    assert len(cache) == 2
    assert cache.get(1) is None
    assert cache.get(3) == [3]


def test_threads_inserting_and_evicting_at_once_never_break_it() -> None:
    cache: BoundedCache[int, int] = BoundedCache(8)

    def churn(base: int) -> None:
        for i in range(2000):
            cache.put(base * 10_000 + i, i)
            cache.setdefault(base * 10_000 + i // 2, lambda: -1)
            cache.get(base * 10_000 + i - 1)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(churn, range(8)))
    assert len(cache) == 8

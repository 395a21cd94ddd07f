"""The shared bounded LRU and the seen-revisions set built on it."""

from __future__ import annotations

import pytest

from turnwatch.lru import LRU
from turnwatch.revisions import SeenRevisions


def test_put_past_capacity_forgets_the_least_recently_used():
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert list(cache) == ["a", "c"]
    assert cache.peek("b") is None


@pytest.mark.parametrize(
    ("look", "refreshes"),
    [
        (lambda cache: cache.get("a"), True),
        (lambda cache: cache.touch("a"), True),
        (lambda cache: cache.peek("a"), False),
        (lambda cache: "a" in cache, False),
        (lambda cache: list(cache.values()), False),
    ],
)
def test_which_lookups_make_an_entry_recent(look, refreshes):
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert look(cache)
    cache.put("c", 3)
    assert list(cache) == (["a", "c"] if refreshes else ["b", "c"])


def test_absent_keys_answer_none_or_false():
    cache: LRU[str, int] = LRU(2)
    assert cache.get("missing") is None
    assert cache.peek("missing") is None
    assert not cache.touch("missing")
    assert len(cache) == 0


def test_put_replaces_a_value_without_growing():
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("a", 5)
    assert len(cache) == 1
    assert cache.get("a") == 5


def test_on_evict_hears_every_forgotten_entry_but_not_pops():
    forgotten: list[tuple[str, int]] = []
    cache: LRU[str, int] = LRU(1, lambda key, value: forgotten.append((key, value)))
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.pop("b") == 2
    assert cache.pop("b") is None
    assert forgotten == [("a", 1)]
    assert len(cache) == 0


def test_capacity_zero_keeps_nothing_and_reports_it():
    forgotten: list[str] = []
    cache: LRU[str, int] = LRU(0, lambda key, value: forgotten.append(key))
    cache.put("a", 1)
    assert len(cache) == 0
    assert cache.get("a") is None
    assert forgotten == ["a"]


def test_negative_capacity_is_refused():
    with pytest.raises(ValueError, match="capacity must be at least 0"):
        LRU(-1)


def test_seen_revisions_are_per_session_revision_and_topic():
    seen = SeenRevisions(100)
    assert seen.first_time("s-1", 1)
    assert not seen.first_time("s-1", 1)
    assert seen.first_time("s-1", 2)
    assert seen.first_time("s-2", 1)
    assert seen.first_time("s-1", 1, topic="turnwatch.incidents")
    assert not seen.seen("s-1", None)
    seen.add("s-1", None)
    assert seen.seen("s-1", None)
    assert len(seen) == 5


def test_seen_then_add_takes_a_revision_only_once_added():
    seen = SeenRevisions(100)
    assert not seen.seen("s-1", 1)
    assert not seen.seen("s-1", 1)  # asking does not remember
    seen.add("s-1", 1)
    assert seen.seen("s-1", 1)


def test_seen_revisions_are_bounded_and_a_hit_stays_remembered():
    seen = SeenRevisions(3)
    for number in range(3):
        seen.add(f"s-{number}", 1)
    assert seen.seen("s-0", 1)  # refreshed: s-1 is now the least recently seen
    seen.add("s-3", 1)
    assert len(seen) == 3
    assert seen.seen("s-0", 1)
    assert not seen.seen("s-1", 1)

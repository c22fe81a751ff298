"""What a projector keeps of the seqs it wrote: per partition, bounded, forgotten with the partition."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.projector.seqs import KnownSeqs


def test_a_match_written_is_known_and_one_never_written_is_read_from_redis():
    seqs = KnownSeqs()
    seqs.remember(frozenset({(0, "a"), (0, "new")}), {"a": 4})
    assert seqs.split(frozenset({(0, "a"), (0, "new"), (1, "b")})) == ({"a": 4}, frozenset({(1, "b")}))


def test_forgetting_a_partition_forgets_only_its_matches():
    seqs = KnownSeqs()
    seqs.remember(frozenset({(0, "a"), (1, "b")}), {"a": 1, "b": 2})
    seqs.forget(0)
    assert seqs.split(frozenset({(0, "a"), (1, "b")})) == ({"b": 2}, frozenset({(0, "a")}))


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from("abcdefgh"), st.integers(1, 50)), max_size=60))
def test_what_is_known_is_the_last_seq_written_and_never_more_than_the_bound(writes):
    seqs, last = KnownSeqs(per_partition=3), {}
    for partition, match_id, seq in writes:
        seqs.remember(frozenset({(partition, match_id)}), {match_id: seq})
        last[(partition, match_id)] = seq
    for partition in range(3):
        known, _ = seqs.split(frozenset(pair for pair in last if pair[0] == partition))
        assert len(known) <= 3
        assert all(last[(partition, match_id)] == seq for match_id, seq in known.items())
        recent = [m for p, m, _ in reversed(writes) if p == partition]
        newest = list(dict.fromkeys(recent))[:3]  # the three written last stay
        assert set(known) == set(newest)

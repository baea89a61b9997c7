"""The key table grows and shrinks by incremental rehashing; the server
finishes a rehash on its own between requests, so a big table does not
keep paying for two tables long after the keys arrived."""
import time

import pytest


def rehash_overhead(r):
    return r.info("memory")["mem_overhead_db_hashtable_rehashing"]


def add_keys(r, first, count):
    for start in range(first, first + count, 10000):
        p = r.pipeline(transaction=False)
        for i in range(start, min(first + count, start + 10000)):
            p.execute_command("RL.FIXED", "grow:%08d" % i, 10, 3600)
        assert all(reply[0] == 0 for reply in p.execute())


def wait_settled(r, seconds):
    deadline = time.monotonic() + seconds
    while rehash_overhead(r) != 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return rehash_overhead(r)


@pytest.mark.allocator
def test_growth_past_a_power_of_two_settles_without_more_requests(r):
    # 65,536 keys fill a 65,536-bucket table; the next key starts a move to
    # 131,072 buckets. A thousand more requests move a thousand buckets;
    # the rest must be moved by the server itself, idle or not.
    add_keys(r, 0, 65535)
    assert wait_settled(r, 5) == 0
    # INFO in the same read as the key that fills the table sees the move
    # under way: the old table's 65,536 buckets of 4 bytes.
    p = r.pipeline(transaction=False)
    p.execute_command("RL.FIXED", "grow:%08d" % 65535, 10, 3600)
    p.execute_command("INFO", "memory")
    assert p.execute()[1]["mem_overhead_db_hashtable_rehashing"] == 65536 * 4
    add_keys(r, 65536, 1000)
    assert r.dbsize() == 66536
    assert wait_settled(r, 2) == 0
    # Every key is still found after the move.
    p = r.pipeline(transaction=False)
    for i in range(0, 66536, 97):
        p.exists("grow:%08d" % i)
    assert all(p.execute())

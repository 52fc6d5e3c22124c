"""What a run will cost, estimated before it starts (``signsim.resources``): the server's stages are part of it.

The oracle is the count written out here from each rule's definition: Krum and Multi-Krum compute the squared
distance of every pair of the n messages (n^2 d operations, whatever the implementation shares), NNM the same before
mixing, CAF holds about four n x n matrices. Memory: the largest of one call's scratch (the distance matrix's rows
are padded to a multiple of 8, a vector register; NNM also keeps each message's nearest and a block of 128
coordinates of its output)."""

from __future__ import annotations

import pytest

from signsim.interface import config
from signsim.resources import run_work, server_cost


def _cfg(**options):
    return config.resolve({"iters": 10, **options})


@pytest.mark.parametrize("aggregate, pre, ops, mem", [
    ("mean", None, lambda n, d: n * d, lambda n, d: 0),
    ("multikrum:1:0", None, lambda n, d: n * n * d, lambda n, d: 8 * n * 16),  # n x (n rounded up to 8) distances
    ("krum:1", "nnm:1", lambda n, d: 2 * n * n * d, lambda n, d: 8 * n * (16 + n + 128)),
    ("caf:1", None, lambda n, d: n * n * d + n ** 3, lambda n, d: 8 * (4 * n * n + n)),
])
def test_the_servers_work_and_memory_as_each_rule_defines_them(aggregate, pre, ops, mem):
    n, d = 12, 30
    cfg = _cfg(workers=n, dim=d, aggregate=aggregate, **({"pre_aggregate": pre} if pre else {}))
    assert server_cost(cfg, d, n) == (ops(n, d), mem(n, d))


def test_the_run_estimate_adds_the_servers_work_each_round():
    cfg = _cfg(workers=10, dim=20, aggregate="multikrum:1:0", iters=7)
    assert run_work(cfg, 20, False) == 7 * (10 * 20 + 10 * 10 * 20)


def test_an_all_pairs_rule_on_many_workers_is_refused_or_announced_before_it_starts(cli):
    """The audit's case: 10^5 workers, Multi-Krum, 10^6 iterations, about 10^17 operations (years), started with no
    note; and CAF at 10^5 workers, whose matrices need hundreds of GB, said 'not enough memory' naming no option."""
    r = cli("run", "--workers", "100000", "--aggregate", "multikrum:1:0", "--iters", "1000000")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err  # its distances alone need 80 GB
    assert "--aggregate multikrum:1:0" in r.err and "GB" in r.err, r.err
    r = cli("run", "--workers", "3000", "--aggregate", "multikrum:1:0", "--iters", "100000000", "--dim", "100")
    assert r.code == 2 and "years" in r.err and "M^2 d" in r.err, r.err  # 10^8 rounds of 3000^2 x 100
    r = cli("run", "--workers", "100000", "--aggregate", "caf:3", "--iters", "10", "--dim", "10")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "--aggregate caf:3" in r.err and "GB" in r.err and "--workers" in r.err, r.err

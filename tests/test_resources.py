"""What a run will cost, estimated before it starts (``signsim.resources``): the server's stages are part of it.

The oracle is the count written out here from each rule's definition: Krum and Multi-Krum compute the squared
distance of every pair of the n messages (n^2 d operations, whatever the implementation shares), NNM the same before
mixing (and writes n mixed messages of d floats), CAF holds about four n x n matrices."""

from __future__ import annotations

import pytest

from signsim.interface import config
from signsim.resources import run_work, server_cost


def _cfg(**options):
    return config.resolve({"iters": 10, **options})


@pytest.mark.parametrize("aggregate, pre, ops, mem", [
    ("mean", None, lambda n, d: n * d, lambda n, d: 0),
    ("multikrum:1:0", None, lambda n, d: n * n * d, lambda n, d: 0),
    ("krum:1", "nnm:1", lambda n, d: 2 * n * n * d, lambda n, d: 8 * n * d),
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
    assert r.code == 2 and "years" in r.err and "M^2 d" in r.err, r.err
    r = cli("run", "--workers", "100000", "--aggregate", "caf:3", "--iters", "10", "--dim", "10")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "--aggregate caf:3" in r.err and "GB" in r.err and "--workers" in r.err, r.err

"""QSGD's two codings on a Gaussian vector (docs/theory.md §8.1): the bits of ``qsgd:S`` (fixed-length code) and
of ``qsgd:S:elias`` (the paper's Elias code) for the same draws, from the compiled kernel, over many seeds; their
ratio, and the expected-length bound of Alistarh et al. (2017), Theorem 3.2, without its o(1) term. Asserts
nothing.

    python benchmarks/qsgd_coding.py [--d 1000] [--s 4] [--draws 2000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from signsim import stages
from signsim.engine import stage_kernels


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--s", type=int, default=4)
    ap.add_argument("--draws", type=int, default=2000)
    a = ap.parse_args()
    fixed = stages.parse_compressor(f"qsgd:{a.s}", a.d)
    elias = stages.parse_compressor(f"qsgd:{a.s}:elias", a.d)
    rng = np.random.default_rng(0)
    fb, eb, nnz = [], [], []
    for k in range(a.draws):
        x = rng.standard_normal(a.d)
        out, b1 = stage_kernels.compress_once(fixed, x, 0, np.random.default_rng(k))
        _, b2 = stage_kernels.compress_once(elias, x, 0, np.random.default_rng(k))
        fb.append(b1)
        eb.append(b2)
        nnz.append(np.count_nonzero(out))
    fb, eb = np.array(fb), np.array(eb)
    ratio = fb / eb
    n, s = a.d, a.s
    bound = (3 + 1.5 * math.log2(2 * (s * s + n) / (s * (s + math.sqrt(n))))) * s * (s + math.sqrt(n)) + 32
    se = ratio.std(ddof=1) / math.sqrt(a.draws)
    print(f"Gaussian x, d = {a.d}, s = {a.s}, {a.draws} vectors and draws")
    print(f"non-zero levels   mean {np.mean(nnz):.1f}")
    print(f"fixed-length code mean {fb.mean():.1f} bits")
    print(f"Elias code        mean {eb.mean():.1f} bits (Theorem 3.2's bound without o(1): {bound:.0f})")
    print(f"fixed / Elias     mean ratio {ratio.mean():.4f} +- {se:.4f} (ratio of means {fb.mean() / eb.mean():.4f})")


if __name__ == "__main__":
    main()

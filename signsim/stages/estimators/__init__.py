"""The gradient estimators, one module each (see ``signsim.stages.base`` for what a module declares): what a worker
compresses in place of its vector v, and how the server makes the direction from the aggregate of those messages
(docs/theory.md §8.7). ``before(v, g, h, p)`` returns u (it may write over g, no longer needed), ``after(h, out, p)``
updates the worker's state h from its message, ``direction(agg, hbar, p, S, M)`` returns the direction from the
aggregate of the round's S messages and the server's state ``hbar`` (2 x d)."""

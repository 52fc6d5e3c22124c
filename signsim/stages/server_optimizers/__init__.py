"""The server optimizers, one module each (see ``signsim.stages.base`` for what a module declares): the server's
update from the round's direction (docs/theory.md §12.4). ``update(direction, opt, p, k)`` returns the vector x
moves by, times the server's step size eta_s gamma_k; ``opt`` holds the optimizer's state (3 x d: first moment,
second moment, the update) when the module sets ``STATE``, else a 1 x 1 placeholder; ``k`` is the round."""

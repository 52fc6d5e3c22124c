"""A user's PyTorch model as a problem (``--model FILE.py``; docs/theory.md §13, docs/api.md "Your own PyTorch model").

The file's ``data()`` gives the samples (a held-out part is split off by ``--test-fraction`` when it gives no test
set), signsim's own ``--split`` spreads the training samples over the M workers, and ``model()`` (called under a
torch seed drawn from the run's seed) gives the starting point x0, its parameters as one flat vector. Each round the
engine asks ``Gradients.round`` for its participants' minibatch gradients (rows drawn from each worker's own stream,
as the built-in data problems draw them), and before each history row for the full-data loss and gradient
(``Gradients.evaluate``); the compiled loop does the rest (``signsim.problems.external``).
"""

from __future__ import annotations

import numpy as np

from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec
from signsim.problems.external import F_LOSS, F_TEST_ACC, F_TEST_LOSS, F_TRAIN_ACC, N_PF

CODE = int(Problem.EXTERNAL)


def _torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError("--model: training a PyTorch model needs PyTorch: pip install 'signsim[torch]'") from None


class Gradients:
    """What the engine calls for a problem whose gradients come from outside the loop (``ProblemInstance.external``):
    ``round`` fills the participants' rows of the gradient buffer, ``evaluate`` the problem's arrays that the
    history reads. ``local_steps`` H are taken here (the loop sees H = 1 and each worker's pseudo-gradient)."""

    def __init__(self, oracle, split, batch_size: int, local_steps: int, pf: np.ndarray, b: np.ndarray,
                 torch_seed: int = 0):
        import torch

        self.oracle, self.split, self.tau, self.H = oracle, split, int(batch_size), int(local_steps)
        self.pf, self.b = pf, b
        #: the run's own state of torch's generator (dropout masks and other random layers): swapped in for each
        #: round, so that a run draws the same whatever ran before it in the process (a [[compare]], a sweep worker)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            self.torch_state = torch.random.get_rng_state()

    def rows(self, workers, gens) -> np.ndarray:
        """(H, S, tau) training rows: worker j's H minibatches drawn from its own stream ``gens[j]``, in order; in
        compiled code when ``gens`` is a typed list (the engine's: ``sampling.minibatch_rows``), else by its NumPy
        reference (``minibatch_ref``: the same draws)."""
        from numba.typed import List

        from signsim.problems.sampling import minibatch_ref, minibatch_rows

        sp = self.split
        out = np.empty((self.H, len(workers), self.tau), dtype=np.int64)
        if isinstance(gens, List) and self.tau > 0 and len(workers):  # (its length is checked there)
            minibatch_rows(np.int64(sp.mode), np.asarray(workers, dtype=np.int64), gens, sp.ptr, sp.idx, out)
            return out
        for j, (m, gen) in enumerate(zip(workers, gens, strict=True)):
            for h in range(self.H):
                out[h, j] = minibatch_ref(sp.mode, int(m), gen, self.tau, sp.ptr, sp.idx)
        return out

    def round(self, x: np.ndarray, workers, gens, lr: float, out: np.ndarray, checkpoint=None) -> None:
        """out[j] <- participant ``workers[j]``'s pseudo-gradient at x (``ModelOracle.worker_gradients``);
        ``checkpoint()`` is called between its local steps' gradient passes (it may raise to abandon the round)."""
        import torch

        rows = self.rows(workers, gens)
        outside = torch.random.get_rng_state()
        torch.random.set_rng_state(self.torch_state)
        try:  # (the user's model or loss failing is one line naming the file: ``oracle.guarded``)
            self.oracle.worker_gradients(x, rows, lr, out, checkpoint)
            self.torch_state = torch.random.get_rng_state()
        finally:
            torch.random.set_rng_state(outside)
        # (a sign would hide it: the stages must never see NaN from the model; worker by worker, no temporary of
        # the buffer's size: 81 MB of faulted pages a round for pfl-research's CIFAR-10 CNN with 50 workers)
        j = next((j for j in range(len(workers)) if not np.isfinite(out[j]).all()), None)
        if j is not None:
            o = self.oracle
            raise InputError(f"{o.where}: worker {int(workers[j])}'s minibatch gradient is not finite (rows "
                             f"{rows[0, j, :5].tolist()}{' ...' if rows.shape[2] > 5 else ''}; with local steps, "
                             "possibly a diverged local step): check the loss on those samples")

    def sample_moments(self, x: np.ndarray, tau: int, workers: int, gens, samples: int) -> tuple:
        """For each worker w < ``workers``, ``samples`` minibatch gradients of its own oracle at x, tau rows drawn
        as its rounds draw them, draws c S / C to (c + 1) S / C from ``gens[c]`` (C = len(gens)), worker by worker,
        as the compiled estimate partitions them: (count > 0, count = 0, sum, sum of squares), each workers x d.
        The diagnostics' Monte Carlo estimate of the sign laws (docs/theory.md §1), 256 minibatches per batched
        call, the model in training mode (dropout from the run's own torch state, as the rounds draw)."""
        import torch

        from signsim.problems.sampling import minibatch_ref

        sp, d, C = self.split, self.oracle.dim, len(gens)
        out = np.zeros((4, workers, d))
        buf = np.zeros((256, d))
        outside = torch.random.get_rng_state()
        torch.random.set_rng_state(self.torch_state)
        try:
            for w in range(workers):
                for c, gen in enumerate(gens):
                    n = (c + 1) * samples // C - c * samples // C  # chunk c: draws c S / C to (c + 1) S / C
                    for lo in range(0, n, 256):
                        m = min(256, n - lo)
                        rows = np.stack([minibatch_ref(sp.mode, w, gen, tau, sp.ptr, sp.idx) for _ in range(m)])
                        self.oracle.worker_gradients(x, rows[None], 0.0, buf)
                        _add_moments(out[:, w], buf[:m])
        finally:
            torch.random.set_rng_state(outside)
        return out[0], out[1], out[2], out[3]

    def group_moments(self, x: np.ndarray, rows: np.ndarray) -> tuple:
        """(count > 0, count = 0, sum, sum of squares) of the per-sample gradients of ``rows`` (model in evaluation
        mode), 1,024 rows at a time."""
        out = np.zeros((4, self.oracle.dim))
        for lo in range(0, len(rows), 1024):
            _add_moments(out, self.oracle.sample_gradients(x, rows[lo:lo + 1024]))
        return out[0], out[1], out[2], out[3]

    def group_means(self, x: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
        """The mean gradient of each group of rows (a row per group, a shard each: ``heterogeneity.worker_means``):
        the gradient of the model's mean loss over the group, for groups of one size at a time, as many groups a
        call as hold about 4,096 rows (one ``torch.func`` call per shard took 8 s of a 1,000-client run's start,
        more than the run itself)."""
        out = np.zeros((len(groups), self.oracle.dim))
        by_size: dict[int, list[int]] = {}
        for k, g in enumerate(groups):
            by_size.setdefault(len(g), []).append(k)
        for size, members in by_size.items():
            step = max(1, 4096 // max(size, 1))
            for lo in range(0, len(members), step):
                chosen = members[lo:lo + step]
                out[chosen] = self.oracle.group_gradients(x, np.stack([groups[k] for k in chosen]))
        return out

    def evaluate(self, x: np.ndarray) -> None:
        loss, train_acc, test_acc, test_loss, g = self.oracle.evaluate(x)
        self.pf[F_LOSS], self.pf[F_TRAIN_ACC], self.pf[F_TEST_ACC], self.pf[F_TEST_LOSS] = (
            loss, train_acc, test_acc, test_loss)
        self.b[:] = g


def _add_moments(out: np.ndarray, G: np.ndarray) -> None:
    """out (4 x d) += (count > 0, count = 0, sum, sum of squares) of the rows of G."""
    out[0] += (G > 0).sum(axis=0)
    out[1] += (G == 0).sum(axis=0)
    out[2] += G.sum(axis=0)
    out[3] += (G * G).sum(axis=0)


def _arrays(data, where: str):
    """The model file's data() as (X_train, y_train, X_test, y_test) tensors (the test pair None when not given)."""
    from signsim.torch.oracle import as_tensor

    if not isinstance(data, (tuple, list)) or len(data) not in (2, 4):
        got = f"a {type(data).__name__}" + (f" of length {len(data)}" if isinstance(data, (tuple, list)) else "")
        raise InputError(f"{where}: data() must return (X, y) or (X_train, y_train, X_test, y_test), got {got}")
    names = ("X", "y") if len(data) == 2 else ("X_train", "y_train", "X_test", "y_test")
    t = [as_tensor(a, n, f"{where}: data()") for a, n in zip(data, names, strict=True)]
    for i in range(0, len(t), 2):
        X, y = t[i], t[i + 1]
        if X.shape[0] != y.shape[0]:
            raise InputError(f"{where}: data()'s {names[i]} has {X.shape[0]} rows but {names[i + 1]} has "
                             f"{y.shape[0]}")
        if X.shape[0] == 0 and i == 0:
            raise InputError(f"{where}: data() gives no training sample")
    if len(t) == 4 and t[0].shape[1:] != t[2].shape[1:]:
        raise InputError(f"{where}: data()'s X_train has rows of shape {tuple(t[0].shape[1:])} but X_test "
                         f"{tuple(t[2].shape[1:])}")
    return t if len(t) == 4 else [t[0], t[1], None, None]


def build(cfg) -> ProblemInstance:
    _torch()
    import torch

    from signsim.data.splits import make_split
    from signsim.seeding import problem_streams
    from signsim.torch import model_file
    from signsim.torch.oracle import ModelOracle

    if cfg.model is None:
        raise InputError("--problem model: give the model file with --model FILE.py")
    mf = model_file.load(cfg.model)
    where = f"--model {cfg.model}"
    r_prepare, r_split, r_init = problem_streams(cfg.seed, 3)
    X_train, y_train, X_test, y_test = _arrays(model_file.call(mf, "data"), where)
    if X_test is None:  # hold out round(n * test_fraction) samples, as the built-in data problems do
        n = X_train.shape[0]
        n_test = int(round(n * cfg.test_fraction))
        if n - n_test < 1:
            raise InputError(f"--test-fraction {cfg.test_fraction}: leaves no training sample out of {n}")
        order = r_prepare.permutation(n)
        test, train = torch.from_numpy(order[:n_test]), torch.from_numpy(np.sort(order[n_test:]))
        X_test, y_test = X_train[test], y_train[test]
        # (with none held out, the training rows are all of them in order: no copy, 0.09 s of FLUTE's 188 MB)
        X_train, y_train = (X_train[train], y_train[train]) if n_test else (X_train.contiguous(), y_train.contiguous())
    labels = y_train.numpy() if y_train.ndim == 1 else np.zeros(y_train.shape[0])
    split = make_split(cfg.split, labels, cfg.workers, r_split)
    init_seed, train_seed = (int(v) for v in r_init.integers(2**62, size=2))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(init_seed)
        module = model_file.call(mf, "model")
        if not isinstance(module, torch.nn.Module):
            raise InputError(f"{where}: model() must return a torch.nn.Module, got {type(module).__name__}")
        oracle = ModelOracle(module, mf.module.loss, X_train, y_train, X_test, y_test, where, mf.path)
        x0 = oracle.flat().to(torch.float64).numpy().copy()
    _check_loss(oracle, mf, where, split, cfg.batch_size)
    oracle.choose_gradients(cfg.model_gradients)  # (after the loss's check: a broken loss is reported as such)
    _check_gradient(oracle, mf, where, split, cfg.batch_size)
    pf, b = np.zeros(N_PF), np.zeros(oracle.dim)
    grads = Gradients(oracle, split, cfg.batch_size, cfg.local_steps, pf, b, train_seed)
    n = oracle.n

    def per_sample_grads(x, rows):
        return oracle.sample_gradients(x, rows)

    def oracle_ref(x, worker, gen, tau):
        from signsim.problems.sampling import minibatch_ref

        rows = minibatch_ref(split.mode, worker, gen, tau, split.ptr, split.idx)
        return per_sample_grads(x, rows).mean(axis=0)

    def full_grad(x):
        return oracle.evaluate(x)[4]

    from signsim.problems.finite_sum import FiniteSum

    def sq_norms(x):
        return np.concatenate([np.sum(per_sample_grads(x, np.arange(lo, min(n, lo + 1024))) ** 2, axis=1)
                               for lo in range(0, n, 1024)])

    inst = ProblemInstance(
        name="model", code=CODE, dim=oracle.dim, x0=x0, loss_ref=oracle.loss, grad_ref=full_grad,
        oracle_ref=oracle_ref, pf=pf, b=b, ptr=split.ptr, idx=split.idx, heterogeneous=split.heterogeneous,
        classifier=oracle.classifier, finite_sum=FiniteSum(n, split, per_sample_grads, sq_norms),
    )
    inst.external = grads
    inst.extra_facts = {"model_file": mf.path, "model_sha256": mf.sha256, "n_train": n,
                        "n_test": int(oracle.X_test.shape[0]), "shard_sizes": np.diff(split.ptr).tolist(),
                        "parameters": oracle.dim, "torch_dtype": str(oracle.dtype).replace("torch.", ""),
                        "model_gradients": "vmap" if oracle.grouped is None else "grouped"}
    return inst


def _check_loss(oracle, mf, where: str, split, tau: int) -> None:
    """The loss at x0 on one minibatch is a finite scalar (else one line naming the file)."""
    import torch

    rows = split.idx[: max(1, min(tau, split.idx.size))]
    x0 = oracle.flat()
    try:
        with torch.no_grad():
            value = oracle.loss_fn(oracle._output(x0, oracle.X_train[rows]), oracle.y_train[rows])
    except BaseException as e:  # noqa: BLE001 - the user's model or loss failed on the data
        if isinstance(e, KeyboardInterrupt):
            raise
        from signsim.torch.model_file import culprit

        raise InputError(f"{where}: model and loss fail on a minibatch of data(): {culprit(e, mf.path)}") from None
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise InputError(f"{where}: loss(output, target) must return a scalar tensor (the batch's mean), got "
                         f"{shape}")
    if not bool(torch.isfinite(value)):
        raise InputError(f"{where}: loss(output, target) is {float(value)} at the starting point")


def _check_gradient(oracle, mf, where: str, split, tau: int) -> None:
    """One worker's minibatch gradient at x0, by the path the run takes, is finite (else one line naming the
    file)."""
    import torch

    rows = split.idx[: max(1, min(tau, split.idx.size))]
    x0 = oracle.flat()
    g = np.zeros((1, oracle.dim))
    state = torch.random.get_rng_state()
    try:  # one worker's minibatch gradient, in training mode as the rounds compute it
        oracle.worker_gradients(x0.to(torch.float64).numpy(), rows.reshape(1, 1, -1), 0.0, g)
    except Exception as e:  # vmap or grad refused the model (an in-place update of a captured tensor, ...)
        from signsim.torch.model_file import culprit

        how = "torch.func" if oracle.grouped is None else "one backward pass (--model-gradients grouped)"
        # the oracle's guard has already named the file and the failure: say it once
        why = str(e).removeprefix(f"{where}: ") if isinstance(e, InputError) else culprit(e, mf.path)
        raise InputError(f"{where}: the loss cannot be differentiated per worker with {how} ({why})") from None
    finally:
        torch.random.set_rng_state(state)  # the check draws no dropout mask the run would have drawn
    if not np.all(np.isfinite(g)):
        raise InputError(f"{where}: the gradient at the starting point is not finite")


SPEC = ProblemSpec(
    name="model", code=CODE,
    summary="your PyTorch model (--model FILE.py defining model(), loss(output, target), data()); needs torch",
    options=frozenset({"model", "split", "test_fraction", "model_gradients"}),
    defaults={"model": None, "split": "shared", "test_fraction": 0.2, "batch_size": 32, "model_gradients": "vmap"},
    build=build,
)

"""``signsim bound``: the theorems' bounds (docs/theory.md §3) for a problem's constants, the majority-vote
noise-reduction table, and (``--overlay``) a finished run's observations beside its bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from signsim import __version__
from signsim.diagnostics import bounds as B
from signsim.diagnostics.constants import OVERRIDE, Constant, apply_overrides, derive, derives_smoothness, need
from signsim.errors import InputError
from signsim.interface.config import RunConfig

MAJORITY_TABLE_M = 64


@dataclass
class BoundOptions:
    constants: list[str] = field(default_factory=list)
    box: float = 2.0
    sigma_samples: int = 2000
    at: str = "init"


@dataclass
class BoundSpec:
    key: str
    label: str
    lhs: str
    derived: bool
    #: does the run described by the config match the theorem's algorithm?
    matches: bool
    value: Any  # K -> bound on the lhs
    observe: str  # which observation an overlay compares: rho | rho_M | l1 | l2 (average or min)
    aggregate: str  # mean | min
    note: str = ""


def specs(c: dict[str, Constant], cfg: RunConfig, unimodal: bool | None, no_var: str | None = None,
          rnd=None) -> list[BoundSpec]:
    """The bounds of docs/theory.md §3 for the constants ``c``; ``no_var``: why the noise has no finite variance
    (``noise.base.no_variance``), which makes every bound in sigma not applicable unless sigma was overridden;
    ``rnd``: the round (``diagnostics.rounds.Round``), which restates or withdraws the bounds (``for_round``)."""
    F, L1, gamma = need(c, "F", "L1", "gamma")
    M, alpha = int(c["M"].value), c["alpha"].value
    single = cfg.method == "signsgd" and cfg.momentum == 0
    constant, sqrt = cfg.lr_schedule == "constant", cfg.lr_schedule == "sqrt"
    out = [
        BoundSpec("signsgd-constant", "signSGD, constant step", "(1/K) sum_{k<K} E||g_k||_rho", False,
                  single and M == 1 and constant, lambda K: B.signsgd_constant(F, L1, gamma, K), "rho", "mean"),
        BoundSpec("signsgd-sqrt", "signSGD, gamma_k = gamma_0/sqrt(k+1)", "min_{k<K} E||g_k||_rho", False,
                  single and M == 1 and sqrt, lambda K: B.signsgd_sqrt(F, L1, gamma, K), "rho", "min"),
        BoundSpec("majority-constant", f"majority vote of M = {M}, constant step", "(1/K) sum_{k<K} E||g_k||_rho_M",
                  False, single and cfg.aggregate == "majority" and constant,
                  lambda K: B.signsgd_constant(F, L1, gamma, K), "rho_M", "mean"),
        BoundSpec("majority-sqrt", f"majority vote of M = {M}, gamma_0/sqrt(k+1)", "min_{k<K} E||g_k||_rho_M", False,
                  single and cfg.aggregate == "majority" and sqrt, lambda K: B.signsgd_sqrt(F, L1, gamma, K),
                  "rho_M", "min"),
    ]
    if "sigma1" in c:
        (s1,) = need(c, "sigma1")
        theorem = "minibatch K and step 1/sqrt(||L||_1 K)"
        K = cfg.iters
        settings = cfg.batch_size == K and constant and math.isclose(gamma, 1 / math.sqrt(L1 * max(K, 1)), rel_tol=1e-3)
        out.append(BoundSpec("bernstein", "Bernstein et al. 2018", "[E (1/K) sum ||g_k||_1]^2", False,
                             single and M == 1 and settings, lambda K: B.bernstein(F, L1, s1, K), "l1",
                             "mean_squared", f"theorem's settings: {theorem}"))
        note = "" if unimodal else "needs unimodal symmetric noise (not known to hold here); "
        out.append(BoundSpec("bernstein-majority", f"Bernstein et al. 2018, majority vote of M = {M}",
                             "[E (1/K) sum ||g_k||_1]^2", False,
                             single and cfg.aggregate == "majority" and settings and bool(unimodal),
                             lambda K: B.bernstein(F, L1, s1, K, M, 0.0, True), "l1", "mean_squared",
                             note + f"theorem's settings: {theorem}"))
        if alpha > 0:
            ok = alpha < 0.5
            out.append(BoundSpec("bernstein-byzantine", f"Bernstein et al. 2019, alpha = {alpha:g} blind adversaries",
                                 "[E (1/K) sum ||g_k||_1]^2", False,
                                 single and cfg.aggregate == "majority" and settings and bool(unimodal),
                                 (lambda K: B.bernstein(F, L1, s1, K, M, alpha, True)) if ok else (lambda K: math.inf),
                                 "l1", "mean_squared", "" if ok else "alpha >= 1/2: no guarantee"))
    if "L2" in c and "sigma_total" in c:
        L2, st, d = need(c, "L2", "sigma_total", "d")
        K = max(cfg.iters, 1)
        gamma0 = gamma * K**0.75  # the run's constant step is gamma_0 K^(-3/4)
        settings = constant and math.isclose(cfg.momentum, 1 - 1 / math.sqrt(K), rel_tol=1e-6, abs_tol=1e-9)
        out.append(BoundSpec("ssdm", "SSDM (derived for this project, not quoted)",
                             "(1/K) sum_{k<K} E||grad f(x_k)||_2",
                             True, cfg.method == "ssdm" and settings and cfg.aggregate == "mean",
                             lambda K: B.ssdm(F, L2, gamma0, int(d), st, K), "l2", "mean",
                             f"gamma_0 = lr K^(3/4) = {gamma0:.4g}; theorem's settings: beta = 1 - 1/sqrt(K), "
                             "constant gamma = gamma_0 K^(-3/4), m_0 = g_hat(x_0)"))
    if no_var:  # heavy tails: a bound in sigma says nothing (docs/theory.md §10.1), unless sigma was given
        for b in out:
            used = "sigma_total" if b.key == "ssdm" else "sigma1" if b.key.startswith("bernstein") else None
            if used is not None and c[used].source != OVERRIDE:
                b.value = lambda K: None
                b.note = f"does not apply: {no_var}"
    if rnd is not None and not rnd.plain:
        for_round(out, c, rnd, unimodal)
    return out


def _withdraw(b: BoundSpec, why: str) -> None:
    b.value = lambda K: None
    b.matches = False
    b.note = f"no bound known: {why}"


def for_round(out: list[BoundSpec], c: dict[str, Constant], rnd, unimodal: bool | None) -> None:
    """The bounds of a federated round (docs/theory.md §12.3). H > 1: none of §3's theorems covers local steps,
    so every bound is withdrawn (null, with the reason). S < M sampled workers: the majority-vote bounds
    describe the vote of the S participants (their right-hand sides do not depend on M; Bernstein's
    2 sigma_1/sqrt(M) becomes 2 sigma_1/sqrt(S)); Bernstein's Byzantine bound and the SSDM bound are withdrawn
    (the number of sampled adversaries varies from round to round; absent workers' momenta are not updated)."""
    if rnd.local:
        for b in out:
            _withdraw(b, f"the theorems (docs/theory.md §3) take one gradient step per round, not H = "
                         f"{rnd.local_steps} local steps")
        return
    S, M = rnd.clients, rnd.workers
    sampled = f"the vote of S = {S} workers sampled of M = {M} each round"
    for b in out:
        if b.key in ("majority-constant", "majority-sqrt"):
            b.label = b.label.replace(f"M = {M}", f"S = {S} sampled of M = {M}")
            b.note = (f"{sampled}: identical workers vote as S of them, so the theorem applies with M = S; "
                      "||.||_rho_M is that vote's")
        elif b.key == "bernstein-majority":
            (F, L1, s1) = need(c, "F", "L1", "sigma1")
            if b.value(2) is not None:
                b.value = lambda K, F=F, L1=L1, s1=s1: B.bernstein(F, L1, s1, K, S, 0.0, True)
            b.label = f"Bernstein et al. 2018, majority vote of S = {S} sampled of M = {M}"
            b.note = f"{sampled}: 2 sigma_1/sqrt(S) (identical workers vote as S of them); " + b.note
        elif b.key == "bernstein-byzantine":
            _withdraw(b, f"the number of Byzantine workers among the {S} sampled varies from round to round")
        elif b.key == "ssdm":
            _withdraw(b, f"with {S} of {M} workers sampled, the absent workers' momenta are not updated "
                         "(docs/theory.md §3.3 updates every worker's momentum every iteration)")


def k_grid(K: int) -> list[int]:
    grid = [10**p for p in range(1, 9) if 10**p < K]
    return [*grid, K] if K >= 2 else [2]


def observation(spec: BoundSpec, doc: dict[str, Any]) -> tuple[float | None, str]:
    """The run's value of the bound's left-hand side, from its tracks and history (iterations k < K)."""
    K = doc["final"]["iters_done"]
    if spec.observe in ("rho", "rho_M"):
        track = [t for t in doc.get("tracks", {}).get("spb", []) if t["iter"] < K]
        if not track:
            return None, "run it with --track-spb 1 to observe rho-norms"
        key = "rho_norm" if spec.observe == "rho" else "rho_M_norm"
        if any(t.get(key) is None for t in track):
            return None, f"{key} was not computed along the run"
        vals = np.array([t[key] for t in track], dtype=float)
        every = track[1]["iter"] - track[0]["iter"] if len(track) > 1 else 1
        where = f"over {len(vals)} tracked iterations" + ("" if every == 1 else f" (every {every}: approximate)")
        return (float(vals.mean()) if spec.aggregate == "mean" else float(vals.min())), where
    rows = [h for h in doc["history"] if h["iter"] < K]
    key = "grad_norm_l1" if spec.observe == "l1" else "grad_norm"
    vals = np.array([h[key] for h in rows], dtype=float)
    if vals.size == 0:
        return None, "no history"
    every = rows[1]["iter"] - rows[0]["iter"] if len(rows) > 1 else 1
    where = f"over {len(vals)} recorded iterations" + ("" if every == 1 else f" (every {every}: approximate)")
    mean = float(vals.mean())
    return (mean**2 if spec.aggregate == "mean_squared" else mean), where


#: points of a running observation kept in the results (log-spaced beyond this)
RUNNING_POINTS = 300


def running(spec: BoundSpec, doc: dict[str, Any]) -> list[dict[str, float]]:
    """The bound's left-hand side as the run went: at K = k + 1 for each recorded (or tracked) iteration k,
    the running mean (or min, or squared mean) over the recorded iterations up to k; what ``bound --plot``
    draws against the bounds. Log-spaced down to at most RUNNING_POINTS points."""
    K = doc["final"]["iters_done"]
    if spec.observe in ("rho", "rho_M"):
        rows = [t for t in doc.get("tracks", {}).get("spb", []) if t["iter"] < K]
        key = "rho_norm" if spec.observe == "rho" else "rho_M_norm"
    else:
        rows = [h for h in doc["history"] if h["iter"] < K]
        key = "grad_norm_l1" if spec.observe == "l1" else "grad_norm"
    if not rows:
        return []
    it = np.array([r["iter"] for r in rows], dtype=float) + 1
    vals = np.array([np.nan if r.get(key) is None else r[key] for r in rows], dtype=float)
    if spec.aggregate == "min":
        acc = np.fmin.accumulate(vals)
    else:
        acc = np.cumsum(vals) / np.arange(1, vals.size + 1)
        if spec.aggregate == "mean_squared":
            acc = acc**2
    keep = np.unique(np.geomspace(1, it.size, RUNNING_POINTS).astype(int) - 1) if it.size > RUNNING_POINTS \
        else np.arange(it.size)
    return [{"K": int(it[i]), "value": float(acc[i])} for i in keep]


def majority_table(problem, model, params, x, cfg: RunConfig, rnd=None) -> dict[str, Any]:
    """||g||_rho_M / ||g||_1 = E<g, vote> / ||g||_1 from the law of the vote (docs/theory.md §9).

    Identical workers: the vote of M copies of the one message law, M = 1..MAJORITY_TABLE_M (the incomplete-
    beta formula when no message is 0). Workers that differ (shards, local objectives, Byzantine workers): one
    row, the configured M, from each worker's own law (another M would be another split). A round
    (docs/theory.md §12): with H > 1 local steps the messages are the signs of the round's u (closed form or
    Monte Carlo); with S < M sampled workers ``sampled_ratio`` is the vote of the S, exact over the sampling."""
    from signsim.diagnostics.estimators import choose, estimate, summarize, vote
    from signsim.diagnostics.votes import Law, message_law, vote_inner_product, vote_law

    note = None
    if rnd is not None and rnd.local:
        from signsim.diagnostics import local_steps

        method = local_steps.choose(problem, model, "auto", rnd.local_steps)
        laws, _, _ = local_steps.round_laws(problem, model, params, x, cfg.batch_size, rnd.local_steps, rnd.step,
                                            method, 2000, cfg.seed, cfg.workers)
        est = summarize(laws, cfg.sign_zero, 0.95, "wilson")
        note = local_steps.note(problem, model, method, rnd.local_steps, laws.samples)
    else:
        method = choose(problem, model, cfg.batch_size, "auto")
        est = estimate(problem, model, params, x, cfg.batch_size, method, 2000, 0.95, "wilson", cfg.sign_zero,
                       cfg.seed, cfg.workers)
    laws, g, rho = est.laws, est.grad, est.rho
    l1 = float(np.abs(g).sum())
    nz = g != 0
    rmin = float(np.min(rho[nz])) if nz.any() else None
    differ = laws.sampling.distinct > 1 or cfg.byzantine > 0
    msg = message_law(laws.raw, cfg.sign_zero)
    zeros = bool(np.any(msg.zero[:, nz] > 0))
    rows = []
    if differ:
        v = vote(laws, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack)
        ratio = vote_inner_product(g, v) / l1 if v is not None and l1 > 0 else None
        rows.append({"M": cfg.workers, "ratio": ratio, "lower_bound": None})
    else:
        for M in range(1, MAJORITY_TABLE_M + 1):
            copies = Law(*(np.repeat(a, M, axis=0) for a in (msg.plus, msg.zero, msg.minus)))
            ratio = vote_inner_product(g, vote_law(copies, cfg.tie)) / l1 if l1 > 0 else None
            l = (M + 1) // 2
            lower = 1 - math.exp(-((2 * rmin - 1) ** 2) * l) if rmin is not None and rmin > 0.5 and not zeros \
                else None
            rows.append({"M": M, "ratio": ratio, "lower_bound": lower})
    sampled = None
    if rnd is not None and rnd.sampled:
        v = vote(laws, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack, rnd.clients)
        sampled = vote_inner_product(g, v) / l1 if v is not None and l1 > 0 else None
    return {"method_of_estimate": method, "sampling": laws.sampling.scheme, "workers_differ": differ,
            "rho_min": rmin, "rows": rows, "local_steps": 1 if rnd is None else rnd.local_steps,
            "clients_per_round": cfg.workers if rnd is None else rnd.clients, "sampled_ratio": sampled,
            "round_note": note}


def round_note(rnd) -> str | None:
    """What the round did to the bounds (the ``round.note`` of bound's document), or None for a plain iteration."""
    if rnd.plain:
        return None
    if rnd.local:
        return (f"H = {rnd.local_steps} local steps per round: no bound known (every bound null, with the reason); "
                "the majority table describes the round's messages")
    return (f"S = {rnd.clients} of M = {rnd.workers} workers sampled per round: the majority-vote bounds describe "
            "the vote of the S (Bernstein's sigma term with S); the Byzantine and SSDM bounds are withdrawn")


def _evaluator(s: BoundSpec, overrides: list[str]):
    """``s.value``, with a bound that leaves the floats (an overflow, a division by an underflowed product) one
    InputError naming the constants the user gave (or the bound's own, when they were all derived)."""

    def value(K: int):
        try:
            return s.value(K)
        except (OverflowError, ZeroDivisionError):
            given = " ".join(f"--constant {c}" for c in overrides)
            raise InputError(f"{given or 'the derived constants'}: the bound {s.key} at K = {K} is past the range of "
                             "a float; give constants of a smaller magnitude") from None

    return value


def bound(cfg: RunConfig, o: BoundOptions, run_doc: dict[str, Any] | None = None) -> dict[str, Any]:
    from signsim import noise, problems
    from signsim.diagnostics.point import resolve_point
    from signsim.diagnostics.rounds import of_config
    from signsim.interface.options import check_fields

    check_fields(o, "bound")  # --box and --at against their rows of signsim.interface.options
    rnd = of_config(cfg, o.at)
    problem = problems.build(cfg)
    apply_overrides({}, list(o.constants or ()))  # the --constant values checked before any kernel compiles
    given = {text.partition("=")[0].strip() for text in o.constants or ()}
    if not derives_smoothness(problem) and "L1" not in given:
        need({}, "L1")
    model, params = noise.for_config(cfg, problem.dim)
    x0 = problem.x0.astype(np.float64)
    c = derive(problem, model, params, cfg, x0, o.box, o.sigma_samples)
    if rnd.server_lr != 1 or cfg.local_lr is not None:  # the server's step: x <- x - eta_s gamma_k direction
        c["gamma"] = Constant("gamma", rnd.server_lr * rnd.local_lr,
                              f"--server-lr {rnd.server_lr:g} x local step size {rnd.local_lr:g} (the server's step)")
    apply_overrides(c, o.constants)
    step = c["gamma"].value
    if not 0 < step < math.inf:  # a product of step sizes past the floats: the bounds divide by gamma
        raise InputError(f"{c['gamma'].source}: the step gamma = {step:g} is not a positive float (the product "
                         f"{'underflows to 0' if step == 0 else 'overflows'}); the bounds divide by it")
    unimodal = model.unimodal_symmetric if problem.exact_oracle else None
    K = int(c["K"].value)
    rows = []
    from signsim.noise.base import no_variance

    for s in specs(c, cfg, unimodal, no_variance(model, params), rnd):
        value = _evaluator(s, o.constants)
        entry = {"key": s.key, "label": s.label, "lhs": s.lhs, "derived": s.derived, "matches_run": s.matches,
                 "note": s.note, "at_K": value(max(K, 2)),
                 "values": [{"K": k, "bound": value(k)} for k in k_grid(K)]}
        if run_doc is not None:
            try:
                k_run = max(int(run_doc["final"]["iters_done"]), 2)
                obs, where = observation(s, run_doc)
                series = running(s, run_doc)
            except InputError:
                raise
            except (KeyError, TypeError, ValueError, IndexError) as e:
                raise InputError(f"--overlay: malformed run results ({type(e).__name__}: {e})") from None
            entry.update(bound_at_run=value(k_run), observed=obs, observed_over=where,
                         exceeded=s.matches and obs is not None and obs > value(k_run),
                         observed_running=series)
        rows.append(entry)
    x, where = resolve_point(o.at, problem, cfg)
    doc = {"signsim_version": __version__, "command": "bound", "config": cfg.to_dict(),
           "problem": problem.facts(),
           "constants": [{"name": k.name, "value": k.value, "source": k.source} for k in c.values()],
           "round": {**rnd.fields(), "note": round_note(rnd)},
           "bounds": rows, "majority_table": {"point": where, **majority_table(problem, model, params, x, cfg, rnd)}}
    if run_doc is not None:
        doc["overlay"] = {"status": run_doc["status"], "iters_done": run_doc["final"]["iters_done"],
                          "exceeded": [r["key"] for r in rows if r.get("exceeded")]}
    return doc

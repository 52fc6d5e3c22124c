"""The contract every noise model fulfils (docs/theory.md §5, "noise models for synthetic problems").

A noise model adds a zero-mean perturbation xi with standard deviation sigma to each coordinate of an exact
gradient. Each model carries three independent views of the same distribution:

* ``draw(gen, params)``: one sample, a Numba function used inside the compiled loop;
* ``sample(gen, size, params)``: NumPy samples, the reference the tests compare the kernel with (it consumes
  the generator exactly as ``draw`` does, so both give the same numbers from the same seed);
* ``cdf(z, params)``: the exact CDF, from which diagnostics get closed-form success probabilities
  rho_i = P(sign(g_i + xi) = sign g_i) (docs/theory.md §1).

``params`` is a float64 array ``[sigma, extra1, extra2]`` built by ``parse``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError


@dataclass(frozen=True)
class NoiseModel:
    name: str
    code: int
    summary: str
    #: number of parameters after the name in ``name:p1:p2`` (sigma is always the last one)
    arity: int
    #: unimodal and symmetric: the sufficient condition rho_i >= 1/2 + |g_i| / (2(|g_i| + sqrt(3) sigma_i)) applies
    unimodal_symmetric: bool
    parse_params: Callable[[list[float]], np.ndarray]
    sample: Callable[[np.random.Generator, tuple[int, ...] | int, np.ndarray], np.ndarray]
    cdf: Callable[[np.ndarray, np.ndarray], np.ndarray]
    #: params of the distribution of the mean of tau draws, where that distribution is again this model
    #: (Gaussian, Cauchy, alpha-stable); None: known in closed form at tau = 1 only
    mean_of: Callable[[np.ndarray, int], np.ndarray] | None = None
    #: a valid spec for tests and warm-ups, where the generic NAME:3:...:1 is not one
    example: str = ""

    @property
    def example_spec(self) -> str:
        return self.example or (self.name if self.arity == 0 else ":".join([self.name] + ["3"] * (self.arity - 1)
                                                                           + ["1"]))

    def mean_params(self, params: np.ndarray, tau: int) -> np.ndarray | None:
        """Params whose ``cdf`` is the CDF of the mean of tau draws, or None where there is no closed form."""
        params = np.asarray(params, dtype=np.float64)
        if tau == 1 or self.name == "none":
            return params
        if self.mean_of is None:
            return None
        return np.concatenate([self.mean_of(params[:N_NOISE_PARAMS], tau), params[N_NOISE_PARAMS:]])

    def success_probability(self, g: np.ndarray, params: np.ndarray) -> np.ndarray:
        """rho_i = P(sign(g_i + xi) = sign g_i) for one draw (tau = 1), from the exact CDF (docs/theory.md §1).

        For g_i > 0 it is P(xi > -g_i) = 1 - F(-g_i); for g_i < 0 it is P(xi < -g_i) = F(-g_i) (F continuous).
        Undefined (NaN) where g_i = 0.
        """
        g = np.asarray(g, dtype=np.float64)
        F = self.cdf(-g, params)
        rho = np.where(g > 0, 1.0 - F, F)
        return np.where(g == 0, np.nan, rho)


#: the first entries of a params array belong to the model; per-coordinate scales may follow
N_NOISE_PARAMS = 3


def scales(params: np.ndarray, d: int) -> np.ndarray:
    """The per-coordinate noise scales s_i carried after the model's parameters (ones when there are none)."""
    params = np.asarray(params, dtype=np.float64)
    return params[N_NOISE_PARAMS:] if params.shape[0] > N_NOISE_PARAMS else np.ones(d)


def with_scales(params: np.ndarray, s: np.ndarray | None) -> np.ndarray:
    """The model's parameters followed by the scales s_i (docs/theory.md §10.2); unchanged for s = None."""
    head = np.asarray(params, dtype=np.float64)[:N_NOISE_PARAMS]
    return head.copy() if s is None else np.concatenate([head, np.asarray(s, dtype=np.float64)])


def degenerate(model: NoiseModel, params: np.ndarray) -> bool:
    """No randomness at all: no model, sigma = 0, or a zero scale for a model without a variance."""
    sigma = float(params[0])
    return model.name == "none" or sigma == 0 or (not np.isfinite(sigma) and float(params[2]) == 0)


#: how each heavy-tailed model's parameters read in the reason (params[1]: nu of Student-t, alpha of stable)
_TAIL = {"student-t": "nu = {:g} <= 2", "stable": "alpha = {:g} < 2"}


def no_variance(model: NoiseModel, params: np.ndarray) -> str | None:
    """Why the noise has no finite variance, or None when it has one (docs/theory.md §10.1).

    The one rule every sigma-based quantity follows (check-spb's sigma, c, GSNR and l^{1,2} at every tau and
    estimator; diversity's tr Sigma and B_S; bound's sigma1 and sigma_total): a model whose parse gives
    sigma = inf (Student-t with nu <= 2, Cauchy, alpha-stable with alpha < 2) and that puts noise on some
    coordinate (a scale c > 0 and a per-coordinate scale s_i > 0)."""
    if model.name == "none" or np.isfinite(float(params[0])) or degenerate(model, params):
        return None
    params = np.asarray(params, dtype=np.float64)
    if params.shape[0] > N_NOISE_PARAMS and not np.any(params[N_NOISE_PARAMS:] > 0):
        return None
    tail = _TAIL.get(model.name)
    what = f"{model.name} noise" + (f" with {tail.format(float(params[1]))}" if tail else "")
    return f"{what} has no finite variance: sigma does not exist (docs/theory.md §10.1)"


def sigma_vector(model: NoiseModel, params: np.ndarray, d: int) -> np.ndarray:
    """sigma_i = s_i sigma: the standard deviation of coordinate i's noise (inf where the variance is infinite
    (``no_variance``), 0 without noise)."""
    if model.name == "none":
        return np.zeros(d)
    s = scales(params, d)
    if no_variance(model, params):
        return np.where(s > 0, np.inf, 0.0)
    if not np.isfinite(float(params[0])):  # a heavy-tailed model without noise (scale 0)
        return np.zeros(d)
    return float(params[0]) * s


#: the largest noise scale: sigma^2 times dimensions and sample counts must stay a finite float
MAX_SIGMA = 1e100


def sigma_param(value: float, spec: str) -> float:
    """Check a noise standard deviation: finite and >= 0."""
    if not np.isfinite(value) or value < 0:
        raise InputError(f"--noise {spec}: sigma must be a finite number >= 0, got {value}")
    if value > MAX_SIGMA:
        raise InputError(f"--noise {spec}: sigma {value:g} is too large (at most {MAX_SIGMA:g}: sums of squared "
                         "gradients must stay finite)")
    return float(value)

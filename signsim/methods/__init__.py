"""Registry of methods (docs/theory.md §2, §8): each method is a one-line alias for a composition of stages
(``signsim.methods.base``, ``signsim.stages``)."""

from __future__ import annotations

from functools import cache

from signsim.errors import InputError
from signsim.methods.base import MethodSpec

MEAN, MAJ = "mean", "majority"

ALIASES = (
    MethodSpec("sgd", "SGD: workers send g_hat, the server averages (32-bit floats both ways)", "identity", MEAN,
               default_lr=1e-3),
    MethodSpec("signsgd", "signSGD: workers send sign g_hat, the server returns the majority vote (1 bit each way)",
               "sign", MAJ),
    MethodSpec("signum", "Signum: sign of the worker's momentum m = beta m + (1-beta) g_hat, majority vote "
               "(beta 0.9)", "sign", MAJ, default_momentum=0.9),
    MethodSpec("ssdm", "SSDM: stochastic sign of the worker's momentum, server averages the signs (reconstructed)",
               "sto-sign", MEAN, default_momentum=0.9, momentum_from_first=True, needs_homogeneous=True),
    MethodSpec("ef-signsgd", "EF-signSGD: scaled sign of gamma g_hat + error, error kept locally, server averages",
               "scaled-sign", MEAN, error_feedback="ef", default_lr=1e-3),
    MethodSpec("sto-sign", "stochastic sign descent: +1 w.p. 1/2 + g_i/(2 ||g||_2) else -1, the server averages "
               "the signs", "sto-sign", MEAN),
    MethodSpec("lion", "distributed Lion: sign of beta1 m + (1-beta1) g_hat per worker, m <- beta2 m + "
               "(1-beta2) g_hat, majority vote", "sign", MAJ, momentum_kind="lion", default_momentum=0.9,
               default_momentum2=0.99, default_lr=1e-3),
    MethodSpec("qsgd", "QSGD: unbiased stochastic quantization to s = 4 levels of |g_i|/||g||_2, server averages",
               "qsgd:4", MEAN, default_lr=1e-3),
    MethodSpec("terngrad", "TernGrad: max|g| sign(g_i) Bernoulli(|g_i|/max|g|), server averages", "terngrad", MEAN,
               default_lr=1e-3),
    MethodSpec("topk-ef", "top-k with error feedback: the k largest entries of gamma g_hat + error",
               "top-k", MEAN, error_feedback="ef", default_lr=1e-3),
    MethodSpec("randk", "rand-k: (d/k) g_hat on k random coordinates (unbiased), server averages", "rand-k", MEAN,
               default_lr=1e-3),
    MethodSpec("ef21", "EF21: workers send C(g_hat - g_m) (top-k), g_m <- g_m + C(...), step along mean g_m",
               "top-k", MEAN, error_feedback="ef21", default_lr=1e-3),
    MethodSpec("ef21-bc", "EF21-BC: EF21 both ways: workers send C(g_hat - g_m) (top-k), the server broadcasts "
               "C(gamma g - w) (top-k), w <- w + C(...), and x moves by w", "top-k", MEAN, error_feedback="ef21",
               default_lr=1e-3, presets=(("down_compressor", "top-k"), ("down_feedback", "ef21"))),
    MethodSpec("ef21-hb", "EF21-HB: EF21 with heavy-ball momentum on the server: v <- beta v + g, x <- x - gamma v "
               "(beta 0.9; lr 1e-4, so that gamma / (1 - beta) is EF21's 1e-3)", "top-k", MEAN, error_feedback="ef21",
               default_lr=1e-4,
               presets=(("server_opt", "fedavgm:0.9"),)),
    MethodSpec("diana", "DIANA: workers send C(g_hat - h_m) (natural compression, omega 1/8), h_m <- h_m + alpha "
               "C(...) (alpha 0.5); the server steps along the mean of the h_m plus the mean message", "natural",
               MEAN, default_lr=1e-3, presets=(("grad_estimator", "diana:0.5"),)),
    MethodSpec("clag", "CLAG: EF21 (top-k) whose worker sends C(g_hat - g_m) only when ||g_hat - g_m||^2 > zeta "
               "||g_hat - y_m||^2 (zeta 1; y_m its last g_hat), else nothing", "top-k", MEAN, error_feedback="clag:1",
               default_lr=1e-3),
    MethodSpec("marina", "MARINA: with probability p (0.1) every worker sends its exact gradient, else C(grad f_m(x^k) "
               "- grad f_m(x^{k-1})) (rand-k); the server's g moves by the mean; exact local gradients (no noise)",
               "rand-k", MEAN, default_lr=1e-3, presets=(("grad_estimator", "marina:0.1"), ("noise", "none"))),
    MethodSpec("fedprox", "FedProx: FedAvg whose H local steps (5) minimize f_m(y) + mu/2 ||y - x||^2 (mu 0.01), "
               "the server averages the models", "identity", MEAN, default_lr=1e-3,
               presets=(("prox_mu", 0.01), ("local_steps", 5))),
    MethodSpec("scaffold", "SCAFFOLD: FedAvg whose H local steps (5) are corrected by the control variates c - c_m; "
               "the server averages the models and the variates (32 d more bits each way)", "identity", MEAN,
               default_lr=1e-3, presets=(("grad_estimator", "scaffold"), ("local_steps", 5))),
    MethodSpec("natural", "natural compression: unbiased rounding of each g_i to a power of two, server averages",
               "natural", MEAN, default_lr=1e-3),
    MethodSpec("onebit-sgd", "1-bit SGD with error feedback: sign mask decoded with the mean of the positive "
               "and of the negative entries", "onebit", MEAN, error_feedback="ef", default_lr=1e-3),
)


@cache
def registry() -> dict[str, MethodSpec]:
    names = [s.name for s in ALIASES]
    assert len(set(names)) == len(names), "method names must be unique"
    return {s.name: s for s in ALIASES}


def get(name: str) -> MethodSpec:
    specs = registry()
    if name not in specs:
        from signsim.suggest import hint

        raise InputError(f"--method: unknown method '{name}'{hint(name, specs)}; choose from {', '.join(specs)}")
    return specs[name]

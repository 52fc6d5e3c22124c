"""One way to choose a stage (issue 31, item 4): a compressor added as a plugin file is a ``diversity --transform``
(through its compiled kernel, with the diagnostic's seeded streams), and the binomial engine takes the compressors,
attacks and aggregations by what their modules declare (a plugin's too), or refuses in one line saying why."""

import json

import numpy as np
import pytest

#: an unbiased compressor of our own without closed forms: each coordinate kept with probability 1/2 and doubled
#: (E C(v) = v, E||C(v)||^2 = 2 ||v||^2), one uniform per coordinate
COIN = '''"""coin: 2 v_i with probability 1/2, else 0."""

STAGE = "compressor"
NAME = "coin"
PARAMS = ()
SUMMARY = "2 v_i w.p. 1/2, else 0 (unbiased, omega = 1)"
KIND = "unbiased"
THEORY = "a test"
SCRATCH = False
BROADCAST = "floats"


def constant(d):
    return 1.0


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    for i in range(v.shape[0]):
        out[i] = 2.0 * v[i] if gen.random() < 0.5 else 0.0
    return 32.0 * v.shape[0]


def bits(d, p, sign_zero, nonzero):
    return 32 * d


def reference(v, p, sign_zero, gen):
    import numpy as np

    return np.where(gen.random(v.size) < 0.5, 2.0 * v, 0.0)
'''

#: the sign compressor again, under another name, declaring that it sends sign(v_i) coordinate by coordinate
MY_SIGN = '''"""my-sign: sign(v), sign(0) by the policy."""

STAGE = "compressor"
NAME = "my-sign"
PARAMS = ()
SUMMARY = "sign(v)"
KIND = "biased"
THEORY = "a test"
SCRATCH = False
BROADCAST = "sign-sum"
COORDINATE_SIGN = True


def constant(d):
    return None


def may_be_zero(sign_zero):
    return sign_zero == 2


def sum_values(M, sign_zero):
    return 2 * M + 1 if sign_zero == 2 else M + 1


def kernel(v, out, p, sign_zero, gen, iwork):
    for i in range(v.shape[0]):
        if v[i] > 0.0:
            out[i] = 1.0
        elif v[i] < 0.0:
            out[i] = -1.0
        elif sign_zero == 1:
            out[i] = 1.0
        elif sign_zero == 2:
            out[i] = 0.0
        else:
            out[i] = 1.0 if gen.random() < 0.5 else -1.0
    return (2.0 if sign_zero == 2 else 1.0) * v.shape[0]


def bits(d, p, sign_zero, nonzero):
    return (2 if sign_zero == 2 else 1) * d


def reference(v, p, sign_zero, gen):
    import numpy as np

    out = np.sign(v)
    for i in np.flatnonzero(v == 0):
        out[i] = 1.0 if sign_zero == 1 else (0.0 if sign_zero == 2 else (1.0 if gen.random() < 0.5 else -1.0))
    return out
'''

#: the invert attack again, under another name, with its law on a sign message
MY_INVERT = '''"""my-invert: -msg."""

STAGE = "attack"
NAME = "my-invert"
PARAMS = ()
SUMMARY = "send -msg"
THEORY = "a test"
OMNISCIENT = False


def row(out, p, gen):
    for i in range(out.shape[0]):
        out[i] = -out[i]


def rows(msg, B, p):
    return


def reference(msg, p, gen):
    return -msg


def reference_rows(msgs, B, p):
    return msgs


def sign_law(p):
    return ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))
'''


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugins")
    paths = {}
    for name, src in (("coin", COIN), ("my_sign", MY_SIGN), ("my_invert", MY_INVERT)):
        paths[name] = folder / f"{name}.py"
        paths[name].write_text(src)
    return paths


@pytest.fixture(scope="module")
def grads(tmp_path_factory):
    G = np.random.default_rng(3).standard_normal((40, 5)) + 0.4
    G[0] = 0.0
    G[1, :2] = 0.0
    path = tmp_path_factory.mktemp("grads") / "g.npy"
    np.save(path, G)
    return path, G


def test_a_plugin_compressor_is_a_transform_applied_by_its_kernel(cli, plugins, grads):
    from signsim.diagnostics import transforms as tr
    from signsim.seeding import diagnostic_streams
    from signsim.stages import registry

    path, G = grads
    # (compiles the plugin's kernel, bounds-checked then cached, and its sampling loop: ~2 CPU-s)
    r = cli("diversity", "--grads", path, "--plugin", plugins["coin"], "--transform", "coin", "--transform-draws",
            "100", "--seed", "7", "--json")
    assert r.code == 0, r.err
    (none, row) = json.loads(r.out)["transforms"]
    assert row["transform"] == "coin" and row["method_of_estimate"] == "monte-carlo" and row["draws"] == 100
    # the same draws by hand: the module's NumPy reference on every row in order, draw r from the r-th stream
    mod = registry.stages("compressor")["coin"]
    a, sums = np.zeros(100), np.zeros((100, G.shape[1]))
    for i, gen in enumerate(diagnostic_streams(7, 100, tr.SALT)):
        T = np.array([mod.reference(g, (), 0, gen) for g in G])
        a[i], sums[i] = np.sum(T * T), T.sum(axis=0)
    c = np.einsum("ij,ij->i", sums, sums)
    assert row["B_S"] == pytest.approx(len(G) * a.mean() / c.mean(), rel=1e-12)
    # and in expectation (closed forms by hand, E C(g) = g, E||C(g)||^2 = 2 ||g||^2): inside the 95% interval, or
    # just outside it (a 5% event here, so allowed a little margin)
    A = 2.0 * np.sum(G * G)
    C = np.sum(G.sum(axis=0) ** 2) + np.sum(G * G)
    lo, hi = row["B_S_interval"]
    width = hi - lo
    assert lo - width <= len(G) * A / C <= hi + width


@pytest.mark.slow  # a second plugin's kernels (bounds-checked, cached) and sampling loop: ~1 CPU-s more
def test_a_deterministic_plugin_transform_equals_the_builtin_closed_form(cli, plugins, grads):
    path, _ = grads
    r = cli("diversity", "--grads", path, "--plugin", plugins["my_sign"], "--sign-zero", "plus", "--transform",
            "my-sign", "--transform", "sign", "--json")
    assert r.code == 0, r.err
    _, mine, builtin = json.loads(r.out)["transforms"]
    assert (mine["method_of_estimate"], builtin["method_of_estimate"]) == ("monte-carlo", "closed-form")
    assert mine["B_S"] == pytest.approx(builtin["B_S"], rel=1e-12)
    assert mine["B_S_interval"] == [mine["B_S"], mine["B_S"]]  # every draw the same


def test_a_plugin_compressor_without_coordinate_signs_is_refused_by_the_binomial_engine(cli, plugins):
    r = cli("run", "--plugin", plugins["coin"], "--compressor", "coin", "--votes", "binomial", "--problem",
            "quadratic", "--dim", "3", "--iters", "3")
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.err, r.err
    assert "--votes binomial" in lines[0] and "COORDINATE_SIGN" in lines[0] and "sends coin" in lines[0]


BINOMIAL = ["run", "--problem", "quadratic", "--dim", "6", "--noise", "gaussian:2", "--method", "signsgd",
            "--votes", "binomial", "--workers", "1001", "--byzantine", "300", "--iters", "40", "--seed", "3", "--json"]


def test_the_binomial_engine_takes_plugin_stages_by_what_they_declare(cli, plugins):
    """A compressor declaring COORDINATE_SIGN and an attack declaring its sign_law run in the binomial engine, and
    give what the built-in sign and invert give, bit for bit (the engine reads declarations, never names)."""
    builtin = cli(*BINOMIAL, "--attack", "invert")
    assert builtin.code == 0, builtin.err
    mine = cli(*BINOMIAL, "--plugin", f"{plugins['my_sign']},{plugins['my_invert']}", "--compressor", "my-sign",
               "--attack", "my-invert")
    assert mine.code == 0, mine.err
    a, b = json.loads(builtin.out), json.loads(mine.out)
    assert a["x_final"] == b["x_final"] and a["history"] == b["history"]
    assert b["stages"]["compressor"]["spec"] == "my-sign"


def test_a_plugin_that_claims_coordinate_signs_wrongly_is_named(cli, tmp_path):
    p = tmp_path / "liar.py"
    p.write_text(COIN.replace('NAME = "coin"', 'NAME = "liar"\nCOORDINATE_SIGN = True'))
    r = cli("run", "--plugin", p, "--method", "signsgd", "--compressor", "liar", "--votes", "binomial", "--problem",
            "quadratic", "--dim", "3", "--iters", "3")
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 2 and len(lines) == 1, r.err
    assert "liar.py" in lines[0] and "declares COORDINATE_SIGN" in lines[0]

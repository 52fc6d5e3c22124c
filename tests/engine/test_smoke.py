"""A plugin's smoke test comes from the table of kinds (signsim.engine.smoke): every call the loop makes on a stage of
its kind, with the arguments the table names, checked against the call's declared result.

Oracles: the loop's own source for which calls it makes (each kind's calls, under the flags it tests), built-in
stages (which the engine runs, so the smoke test must pass them, state widths included), and plugins written here
that break one row of the table each."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from signsim.engine import smoke, stage_kernels
from signsim.errors import InputError
from signsim.stages import kinds, registry

#: a stage of every kind, with the flags and state shapes that change what the smoke test runs: CLAG's two-wide
#: error-feedback row and its LAZY sends, a SUMMED and a robust aggregation, an omniscient attack, a server optimizer
#: and an estimator with state, a pre-aggregation that leaves fewer rows
BUILTIN = [("momentum", "lion"), ("compressor", "top-k:3"), ("error_feedback", "clag:0.5"),
           ("aggregation", "mean"), ("aggregation", "median"), ("attack", "alie"), ("server_optimizer", "fedadam"),
           ("estimator", "diana:0.5"), ("pre_aggregation", "bucketing:2")]


def test_the_smoke_test_makes_the_calls_the_loop_makes_under_the_module_flags(monkeypatch):
    """Recorded without compiling: each kind's calls from the table, those under a flag only when the module sets
    it (the loop reads SUMMED, LAZY and OMNISCIENT before these calls), three rounds each."""
    made = []

    def fake(module, attr, worker_path, checked=False):
        assert checked and not worker_path
        call = next(c for c in kinds.BY_NAME[module.STAGE_KIND].calls if c.attr == attr)
        results = {"vector": lambda *a: np.zeros(D), "bits": lambda *a: 1.0, "rows": lambda *a: 1,
                   "flag": lambda *a: False, "": lambda *a: None}
        return lambda *args: made.append((module.NAME, attr)) or results[call.result](*args)

    monkeypatch.setattr(stage_kernels, "stage_function", fake)
    monkeypatch.setattr(smoke, "_same_bits", lambda *a: None)  # (the fake kernels count no real message)
    D = 8
    for kind, spec in BUILTIN:
        stage = registry.parse(kind, spec, D)
        monkeypatch.setattr(stage.module, "STAGE_KIND", kind, raising=False)
        monkeypatch.setattr(stage.module, "reference", lambda v, *a: np.zeros(len(v)), raising=False)
        made.clear()
        smoke._smoke(stage, D)
        expected = [c.attr for c in kinds.BY_NAME[kind].calls if smoke.makes(c, stage.module)]
        assert made == [(stage.module.NAME, a) for a in expected] * 3, (kind, spec)
    assert smoke.makes(kinds.BY_NAME["aggregation"].calls[0], registry.parse("aggregation", "mean").module)
    assert not smoke.makes(kinds.BY_NAME["aggregation"].calls[1], registry.parse("aggregation", "mean").module)
    assert smoke.makes(kinds.BY_NAME["aggregation"].calls[1], registry.parse("aggregation", "median").module)


@pytest.mark.parametrize("kind,spec", BUILTIN, ids=[s for _, s in BUILTIN])
def test_built_in_stages_pass_the_smoke_test_with_bounds_checks(kind, spec):
    """The engine runs these unchecked, so their checked copies must pass: the arguments have the shapes the loop
    passes (CLAG's memory is 2 d long), and every declared result holds."""
    smoke._smoke(registry.parse(kind, spec, 16), 16)


def _plugin(tmp_path, name: str, source: str):
    from signsim.stages import plugins

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    mod = plugins.load_file(path)
    return registry.parse(mod.STAGE, mod.NAME), path


PRE = '''
    STAGE = "pre_aggregation"
    NAME = "{name}"
    PARAMS = ()
    SUMMARY = "a test pre-aggregation"


    def rows(n, params):
        return n


    def pre(msg, n, p, gen):
        {body}


    def reference(msgs, params, gen):
        return msgs
'''

EF = '''
    import numpy as np

    STAGE = "error_feedback"
    NAME = "{name}"
    PARAMS = ()
    SUMMARY = "a test error feedback keeping two vectors"
    STATE = True
    STATE_WIDTH = 2
    STEP_SCALED = True
    TRACK_ERROR = False


    def before(lr, v, g, e):
        d = v.shape[0]
        for i in range(d):
            e[d + i] = v[i]  # its second vector: inside the 2 d row the engine allocates
        return v


    def after(e, out):
        for i in range(out.shape[0]):
            e[i] += out[i]


    def direction(agg, srv):
        return agg


    def reference_before(lr, v, g, e, params):
        return v


    def reference_after(e, out, params):
        return e


    def reference_direction(agg, srv, params):
        return agg
'''


@pytest.mark.parametrize("body,message", [
    ("return n + 1", "pre must return the number of rows it leaves, 1 to n (got 5 for n = 4)"),
    ("msg[n, 0] = 0.0\n        return n", "outside an array"),
    ("msg[0, 0] = np.nan\n        return n", "pre wrote non-finite values into msg"),
], ids=["too-many-rows", "out-of-bounds", "nan"])
def test_a_pre_aggregation_plugin_breaking_its_row_is_one_line_naming_it(tmp_path, body, message):
    name = f"smoke-pre-{abs(hash(body)) % 10**8}"
    source = PRE.format(name=name, body=body)
    if "np." in body:
        source = "\n    import numpy as np\n" + source
    stage, path = _plugin(tmp_path, name.replace("-", "_"), source)
    with pytest.raises(InputError) as e:
        smoke.smoke_test(stage, 16)
    text = str(e.value)
    assert str(path) in text and message in text and "\n" not in text, text


def test_an_error_feedback_plugin_with_a_two_wide_row_passes_on_the_uplink_only(tmp_path):
    """STATE_WIDTH = 2: the engine allocates 2 d per worker, so writing e[d + i] is in bounds (it was refused when
    the smoke test handed every error feedback a row of length d); the same plugin as the downlink's error feedback,
    whose memory is one d-long row of the downlink's five, would write into the next row, and is refused; so is a
    plugin that declares one vector and writes two."""
    stage, path = _plugin(tmp_path, "smoke_two_wide", EF.format(name="smoke-two-wide"))
    smoke.smoke_test(stage, 16)
    with pytest.raises(InputError, match="outside an array") as e:
        smoke.smoke_test(registry.parse("down_error_feedback", "smoke-two-wide"), 16)
    assert str(path) in str(e.value)
    one_wide, path = _plugin(tmp_path, "smoke_one_wide",
                             EF.format(name="smoke-one-wide").replace("STATE_WIDTH = 2", "STATE_WIDTH = 1"))
    with pytest.raises(InputError, match="outside an array") as e:
        smoke.smoke_test(one_wide, 16)
    assert str(path) in str(e.value)


MOMENTUM = '''
    STAGE = "momentum"
    NAME = "{name}"
    PARAMS = ()
    SUMMARY = "a test momentum"
    STATE = {state}


    def kernel(k, g, m, p):
        for i in range(g.shape[0]):
            m[i] = 0.5 * m[i] + g[i]
        return m


    def reference(k, g, m, params):
        return 0.5 * m + g
'''


def test_a_stage_that_writes_state_it_did_not_declare_is_refused(tmp_path):
    """Without STATE the engine hands the momentum a 1-long placeholder (driver.owned_state); a kernel that writes a
    d-long memory would write past it unchecked."""
    ok, _ = _plugin(tmp_path, "smoke_mom_state", MOMENTUM.format(name="smoke-mom-state", state=True))
    smoke.smoke_test(ok, 16)
    bad, path = _plugin(tmp_path, "smoke_mom_nostate", MOMENTUM.format(name="smoke-mom-nostate", state=False))
    with pytest.raises(InputError, match="outside an array") as e:
        smoke.smoke_test(bad, 16)
    assert str(path) in str(e.value)


def test_an_attack_may_send_infinities():
    """ByzFL's inf attack sends +inf: a kind whose stages may (``Kind.finite`` False) is not held to finite output."""
    assert not kinds.BY_NAME["attack"].finite
    smoke._smoke(registry.parse("attack", "inf"), 16)


def test_every_call_of_the_table_declares_a_known_result_and_a_flag_of_its_kind():
    for kind in kinds.TABLE:
        for call in kind.calls:
            assert call.result in kinds.RESULTS, (kind.name, call.attr)
            if call.when:
                assert call.when.lstrip("!") in kind.flags.values(), (kind.name, call.attr, call.when)


def test_a_compressor_whose_kernel_and_declaration_count_different_bits_is_refused(cli, tmp_path):
    """Issue 50 (a newcomer's finding 5): check-stage showed the two counts apart, but a run accepted the plugin and
    recorded the kernel's count while the budget and the clock used the declared one."""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[2] / "configs" / "plugins" / "scaled_sto_sign.py").read_text()
    assert "    return d + 32\n" in src
    p = tmp_path / "disagree.py"
    p.write_text(src.replace("    return d + 32\n", "    return d + 31\n").replace(
        'NAME = "scaled-sto-sign"', 'NAME = "bits-disagree"'))
    r = cli("run", "--plugin", p, "--compressor", "bits-disagree", "--aggregate", "mean", "--iters", "3", "--quiet")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert "disagree.py" in lines[0] and "counts 42 bits for a message whose declared count is 41" in lines[0]

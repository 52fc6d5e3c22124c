"""The Python API (docs/api.md): the same options give the same --json document as the CLI; the CLI's names
and checks; in-memory data and vector x0; results as NumPy columns; lazy imports."""

import json
import subprocess
import sys

import numpy as np
import pytest

import signsim
from signsim.errors import InputError

RUN = ["--problem", "quadratic", "--dim", "4", "--iters", "40", "--workers", "3", "--batch-size", "2"]


def strip_volatile(doc):
    """Wall time differs between two runs of the same config."""
    doc = json.loads(json.dumps(doc))
    doc.get("final", {}).pop("wall_time", None)
    return doc


def test_import_is_light_and_names_are_exported():
    code = ("import sys, signsim; assert callable(signsim.run) and callable(signsim.sweep); "
            "print(sorted(m for m in ('numpy', 'numba', 'matplotlib', 'scipy') if m in sys.modules))")
    light = subprocess.run([sys.executable, "-c", "import sys, signsim; print(sorted(m for m in "
                            "('numpy', 'numba', 'matplotlib', 'scipy', 'typer') if m in sys.modules))"],
                           capture_output=True, text=True, check=True)
    assert light.stdout.strip() == "[]"
    after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "numba" not in after.stdout and "matplotlib" not in after.stdout
    for name in ("run", "check_spb", "diversity", "bound", "sweep", "spb_from_samples", "diversity_from_samples",
                 "InputError"):
        assert name in dir(signsim) and callable(getattr(signsim, name))
    assert issubclass(signsim.InputError, ValueError)
    from signsim.sweep import spec  # noqa: F401 - the subpackage stays importable, and callable

    assert callable(signsim.sweep) and signsim.sweep.spec is spec


def test_run_matches_cli_json(cli):
    r = cli("run", *RUN, "--json")
    assert r.code == 0, r.err
    api = signsim.run(problem="quadratic", dim=4, iters=40, workers=3, batch_size=2)
    assert strip_volatile(api.to_dict()) == strip_volatile(r.json())
    json.dumps(api.to_dict(), allow_nan=False)  # JSON-safe
    h = api.history
    assert isinstance(h["loss"], np.ndarray) and h["iter"].dtype == np.int64
    assert np.allclose(h["loss"], [row["loss"] for row in r.json()["history"]])
    assert api.status == "ok" and api["config"]["workers"] == 3


def test_option_spellings_and_cli_coercion():
    a = signsim.run(problem="quadratic", dim=4, iters=40, workers=3, batch_size=2)
    b = signsim.run(**{"problem": "quadratic", "dim": "4", "iters": 40, "workers": "3", "batch-size": 2})
    assert strip_volatile(a.to_dict()) == strip_volatile(b.to_dict())
    c = signsim.run({"problem": "quadratic", "batch-size": 2}, dim=4, iters=40, workers=3, lr="0.01")
    assert strip_volatile(c.to_dict()) == strip_volatile(a.to_dict())


@pytest.mark.parametrize(("options", "needle"), [
    ({"lr": "fast"}, "--lr"),
    ({"lr": -1}, "--lr -1: the step size"),  # the value as passed
    ({"workers": 2.5}, "--workers"),
    ({"workers": 0}, "--workers 0: must be an integer from 1"),
    ({"monotone": "yes"}, "--monotone"),
    ({"colour": "red"}, "unknown option --colour"),
    ({"method": 3}, "--method"),
    ({"problem": "quadratic", "x0": [1.0, 2.0]}, "--x0"),
    ({"problem": "quadratic", "dim": 3, "x0": [1.0, np.nan, 2.0]}, "--x0"),
    ({"problem": "logistic", "data": (np.ones((5, 2)), np.ones(4))}, "data"),
    ({"batch_size": 2, "batch-size": 3}, "--batch-size"),
])
def test_bad_input_raises_input_error(options, needle):
    with pytest.raises(InputError) as e:
        signsim.run(iters=5, **options)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_same_message_as_cli(cli):
    r = cli("run", "--lr", "-1", "--iters", "5")
    with pytest.raises(InputError) as e:
        signsim.run(lr=-1, iters=5)
    assert r.code == 2 and str(e.value) in r.err


def test_in_memory_data_equals_the_file(tmp_path):
    from scipy import sparse

    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(120) > 0).astype(float)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    opts = dict(problem="logistic", iters=30, workers=2)
    from_file = signsim.run(data=str(tmp_path / "d.npz"), **opts)
    dense = signsim.run(data=(X, y), **opts)
    sp = signsim.run(data=(sparse.csr_matrix(X), y), **opts)
    assert dense["config"]["data"].startswith("memory:") and sp["config"]["data"] == dense["config"]["data"]
    for r in (dense, sp):
        assert np.array_equal(r.history["loss"], from_file.history["loss"])
        assert np.array_equal(r.history["test_acc"], from_file.history["test_acc"])
    X[0, 0] = 99.0  # the caller's later edits do not change the registered data
    again = signsim.run(data=(X, y), **opts)
    assert again["config"]["data"] != dense["config"]["data"]


def test_vector_x0():
    vec = signsim.run(problem="quadratic", dim=3, iters=10, x0=np.array([2.0, 2.0, 2.0]))
    num = signsim.run(problem="quadratic", dim=3, iters=10, x0=2)
    assert vec["config"]["x0"] == [2.0, 2.0, 2.0] and num["config"]["x0"] == 2.0
    assert np.array_equal(vec.history["loss"], num.history["loss"])
    other = signsim.run(problem="quadratic", dim=3, iters=0, x0=[1.0, -2.0, 3.0], noise="none")
    assert other["x_final"] == [1.0, -2.0, 3.0]
    with pytest.raises(InputError, match="does not apply"):
        signsim.run(problem="mlp", iters=2, x0=[1.0, 2.0])


def test_diagnostics_match_cli(cli, tmp_path):
    r = cli("check-spb", "--workers", "5", "--json")
    api = signsim.check_spb(workers=5)
    assert r.code in (0, 1) and api.to_dict() == r.json()
    assert set(api.history) >= {"coordinate", "rho", "rho_low", "rho_high", "grad", "sigma", "status"}
    assert api.history["rho"].shape == (r.json()["dim"],)
    r = cli("diversity", "--json")
    api = signsim.diversity()
    assert api.to_dict() == r.json() and list(api.history) == ["B", "predicted"]
    run = signsim.run(problem="quadratic", iters=30, track_spb=1, out=tmp_path / "run.json")
    assert set(run.tracks["spb"]) >= {"iter", "spb_fraction", "rho_norm"}
    r = cli("bound", "--overlay", tmp_path / "run.json", "--json")
    for overlay in (run, tmp_path / "run.json", run.to_dict()):
        assert signsim.bound(overlay=overlay).to_dict() == r.json()
    b = signsim.bound(problem="quadratic", constant={"L1": 3.0})
    assert next(c for c in b["constants"] if c["name"] == "L1")["value"] == 3.0
    with pytest.raises(InputError, match="--samples"):
        signsim.check_spb(samples="many")


def test_sweep_api(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('problem = "quadratic"\niters = 20\n[grid]\nworkers = [1, 3]\n')
    plan = signsim.sweep(spec, out=tmp_path / "out", dry_run=True)
    assert plan["dry_run"] and len(plan.history["run_id"]) == 2
    res = signsim.sweep(spec, out=tmp_path / "out", jobs=1)
    assert res["statuses"] == {"ok": 2} and (tmp_path / "out" / "results.csv").is_file()
    assert set(res.history["workers"].tolist()) == {1, 3} and res.history["loss"].dtype == float


def test_to_pandas_without_pandas(monkeypatch):
    r = signsim.run(problem="quadratic", iters=5)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        r.to_pandas()


def test_to_pandas_with_pandas():
    pytest.importorskip("pandas")
    r = signsim.run(problem="quadratic", iters=5)
    df = r.to_pandas()
    assert list(df.columns) == list(r.history) and len(df) == len(r.history["iter"])


def _kernel_manager(tmp_path):
    """A Jupyter kernel of this interpreter (a kernel spec of its own, so that no installed spec is used)."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    spec = tmp_path / "kernels" / "signsim-test"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "signsim test", "language": "python"}))
    return KernelManager(kernel_name="signsim-test",
                         kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]))


@pytest.mark.slow  # a real Jupyter kernel runs docs/api.md (15-19 s on 2 cores); .ci/run runs it
def test_docs_examples_run_in_a_jupyter_kernel(tmp_path, monkeypatch):
    """Every Python block of docs/api.md runs, one cell each, in a real Jupyter kernel (the PyTorch block needs
    torch and is only compiled); a figure is a cell's image; matplotlib's backend is the kernel's before and
    after, and the user's own pyplot figures still show (issue #25)."""
    import re
    from pathlib import Path

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    text = Path("docs/api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 4 and any(".figure(" in b for b in blocks)
    for code in blocks:
        compile(code, "docs/api.md", "exec")
    work = tmp_path / "work"
    work.mkdir()
    (work / "configs").symlink_to(Path("configs").resolve())
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "60")  # the kernel inherits this process's environment
    backend = "import matplotlib\nprint(matplotlib.get_backend())"
    cells = [backend, *[b for b in blocks if "torch" not in b], "run.figure(x='megabytes', y='loss')", "fig",
             backend, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    km = _kernel_manager(tmp_path)
    try:
        nbclient.NotebookClient(nb, km=km, timeout=900,
                                resources={"metadata": {"path": str(work)}}).execute()  # raises on a cell's error
    finally:  # a kernel manager handed in is not shut down by nbclient
        if km.has_kernel:
            km.shutdown_kernel(now=True)

    def mime(cell):
        return {m for o in cell.outputs for m in o.get("data", {})}

    before, after = ("".join(o.get("text", "") for o in nb.cells[i].outputs).strip() for i in (0, -2))
    assert before and after == before, (before, after)
    assert "image/png" in mime(nb.cells[-4]) and "image/png" in mime(nb.cells[-3])
    assert "image/png" in mime(nb.cells[-1])  # the user's own plot


def test_compare_config_matches_cli(cli, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('problem = "quadratic"\ndim = 4\niters = 30\n[[compare]]\nlabel = "sign"\nmethod = "signsgd"\n'
                   '[[compare]]\nmethod = "ssdm"\nworkers = 2\n')
    r = cli("run", "--config", cfg, "--workers", "3", "--json")
    assert r.code == 0, r.err
    api = signsim.run(cfg, workers=3)
    cli_doc = r.json()
    assert [d["config"]["workers"] for d in cli_doc["runs"]] == [3, 3]  # flags override the variants
    assert [strip_volatile(d) for d in api.to_dict()["runs"]] == [strip_volatile(d) for d in cli_doc["runs"]]
    assert [x.status for x in api.runs] == ["ok", "ok"] and list(api.history["label"]) == ["sign", "variant 2"]
    as_dict = signsim.run({"problem": "quadratic", "dim": 4, "iters": 30,
                           "compare": [{"label": "sign", "method": "signsgd"}, {"method": "ssdm", "workers": 2}]},
                          workers=3)
    assert [strip_volatile(d) for d in as_dict.to_dict()["runs"]] == [strip_volatile(d) for d in cli_doc["runs"]]
    with pytest.raises(InputError, match="--workers"):
        signsim.run({"compare": [{"workers": "two"}]})


def test_at_a_vector(tmp_path):
    from signsim import problems
    from signsim.interface import config

    x = problems.build(config.resolve({"problem": "logistic"})).x0 + 0.05
    np.save(tmp_path / "x.npy", x)
    by_file = signsim.check_spb(at=str(tmp_path / "x.npy"), workers=3).to_dict()
    by_vector = signsim.check_spb(at=x, workers=3).to_dict()
    assert by_vector["point"] == by_vector["options"]["at"] == "the given vector"
    for k in ("rho", "verdict", "rho_norm", "rho_M_norm"):
        assert by_vector[k] == by_file[k]
    assert signsim.diversity(at=list(x))["B_S"] == signsim.diversity(at=tmp_path / "x.npy")["B_S"]
    assert signsim.bound(problem="quadratic", dim=3, at=[1.0, 2.0, 3.0])["majority_table"]["point"] == \
        "the given vector"
    with pytest.raises(InputError) as e:
        signsim.check_spb(at=np.ones(3))
    assert str(e.value).startswith("--at (the given vector): holds a vector of length 3; expected a vector of length")


def test_bound_overlay_of_a_vector_x0_run():
    run = signsim.run(problem="quadratic", dim=3, x0=[1.0, 2.0, 3.0], iters=20, track_spb=1)
    b = signsim.bound(overlay=run)
    assert b["config"]["x0"] == [1.0, 2.0, 3.0] and b["overlay"]["iters_done"] == 20


def test_result_figure(tmp_path):
    import warnings

    import matplotlib

    run = signsim.run(problem="quadratic", iters=30, track_spb=10)
    fig = run.figure()
    assert len(fig.get_axes()) == 4 and fig.legends
    before = dict(matplotlib.rcParams)
    one = run.figure(x="megabytes", y="rho-norm", out=tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
    assert one.get_axes()[0].get_ylabel() == r"$E\langle g, \mathrm{sign}\, \hat{g}\rangle$ ($\rho$-norm)"
    assert dict(matplotlib.rcParams) == before  # the caller's style is untouched
    with pytest.raises(InputError, match="--y accuracy: this Result holds no test accuracy; this Result has: loss"):
        run.figure(y="accuracy")
    other = signsim.run(config={"compare": [{"problem": "quadratic"}, {"problem": "rosenbrock"}]}, iters=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        other.figure()
    assert any("different problems" in str(w.message) for w in caught)
    assert signsim.check_spb().figure().get_axes()[0].get_ylabel() == r"success probability $\rho_{i}$"


def test_run_warnings_are_python_warnings():
    with pytest.warns(UserWarning, match="Byzantine"):
        r = signsim.run(problem="quadratic", iters=5, workers=3, byzantine=2)
    assert any("Byzantine" in w for w in r["warnings"])

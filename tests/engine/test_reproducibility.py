"""Same seed -> identical results whatever the Numba thread count; Ctrl-C keeps partial results."""

import json
import os
import signal
import subprocess
import sys

import pytest

from ..conftest import run_subprocess, wait_until_ready


@pytest.mark.parametrize("args", [
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "ssdm", "--iters", "30"),
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "signsgd", "--iters", "30",
     "--byzantine", "5", "--attack", "random", "--noise", "student-t:3:1"),
    ("--method", "signum", "--workers", "8", "--iters", "300"),
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "ef21", "--iters", "20"),
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "qsgd", "--iters", "20",
     "--aggregate", "trimmed:0.2", "--byzantine", "4", "--attack", "alie:1"),
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "randk", "--iters", "20",
     "--aggregate", "median", "--byzantine", "3", "--attack", "random"),
    # federated rounds (docs/theory.md §12): 8 of 32 sampled per round, 4 local steps, threaded (S d H >= 50 000)
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "signum", "--iters", "10",
     "--local-steps", "4", "--participation", "0.25", "--byzantine", "6", "--attack", "alie:1", "--aggregate", "mean"),
])
def test_identical_results_with_1_and_2_threads(args):
    docs = []
    for threads in ("1", "2"):
        r = run_subprocess("run", *args, "--eval-every", "1", "--json", env={"NUMBA_NUM_THREADS": threads})
        assert r.code == 0, r.err
        docs.append(json.loads(r.out))
    assert docs[0]["history"] == docs[1]["history"]
    assert docs[0].get("x_final") == docs[1].get("x_final")


def test_ctrl_c_keeps_the_partial_history(tmp_path):
    out = tmp_path / "partial.json"
    warm = run_subprocess("run", "--iters", "10", "--quiet")  # fill the compile cache first
    assert warm.code == 0, warm.err
    ready = tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-m", "signsim.cli", "run", "--iters", "100000000", "--out", str(out),
                          "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "SIGNSIM_READY_FILE": str(ready)})
    wait_until_ready(p, ready)  # past start-up, a first chunk of iterations done
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err
    doc = json.loads(out.read_text())
    assert doc["status"] == "interrupted"
    assert len(doc["history"]) >= 1
    assert 0 < doc["final"]["iters_done"] < 100_000_000


def test_monte_carlo_spb_is_identical_with_1_and_2_threads():
    docs = []
    for threads in ("1", "2"):
        r = run_subprocess("check-spb", "--problem", "mlp", "--samples", "300", "--batch-size", "4", "--json",
                           env={"NUMBA_NUM_THREADS": threads})
        assert r.code in (0, 1), r.err
        docs.append(json.loads(r.out))
    assert docs[0]["method_of_estimate"] == "monte-carlo"
    assert docs[0]["rho"] == docs[1]["rho"] and docs[0]["sigma"] == docs[1]["sigma"]

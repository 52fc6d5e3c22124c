import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from signsim import config
from signsim.build import build
from signsim.cli import main
from signsim.engine.driver import simulate

# Hypothesis profiles: "quick" (default, CI) and "long" (HYPOTHESIS_PROFILE=long python -m pytest ...)
settings.register_profile("quick", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile("long", max_examples=1500, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run ``signsim ARGS`` in this process; return exit code, stdout, stderr."""

    def call(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return call


def run_subprocess(*args: str, env: dict | None = None, timeout: float = 120) -> CliResult:
    """Run ``signsim ARGS`` in a fresh interpreter (for thread counts, signals and import checks)."""
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run([sys.executable, "-m", "signsim.cli", *map(str, args)], capture_output=True, text=True,
                       env=full_env, timeout=timeout)
    return CliResult(p.returncode, p.stdout, p.stderr)


def make_engine(**options):
    """Resolve options as the CLI would and build the engine, problem and settings."""
    b = build(config.resolve(options))
    return b.engine, b.problem, b.model, b.params, b.settings, b.cfg


def run_engine(**options):
    engine, *_ = make_engine(**options)
    return simulate(engine)


def binomial_tolerance(p: float, n: int, z: float = 5.0) -> float:
    """z standard errors of a proportion estimated from n independent trials."""
    return z * np.sqrt(max(p * (1 - p), 1e-12) / n)


def wait_until_ready(proc: subprocess.Popen, ready: Path, timeout: float = 600) -> None:
    """Wait until a signsim process started with ``SIGNSIM_READY_FILE=ready`` says its compiled work is under way
    (it creates the file: docs/reference.md), rather than sleeping for a guessed time; fail, with its stderr, if
    it ends first."""
    end = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"signsim exited ({proc.returncode}) before its work was under way: {err}")
        if time.monotonic() > end:
            proc.kill()
            pytest.fail(f"signsim did not report its work under way within {timeout:g} s")
        time.sleep(0.02)

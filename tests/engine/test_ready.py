"""``signsim.engine.ready``: Numba set up in a helper thread while a run builds its problem (issue 49). Its empty
kernel, compiled on an empty cache, must not take the compile notice from the run's own kernels; one thread per
process; ``SIGNSIM_READY=0`` turns it off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHECK = """
import json
from signsim.commands import compile as compiling
from signsim.engine import ready
seen = []
with compiling.watch(seen.append):
    first = ready.start()
    if first is not None:
        first.join()
    again = ready.start()
print(json.dumps({"started": first is not None, "same": first is again, "notices": seen}))
"""


def _check(tmp_path, **env) -> dict:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_helper_compiles_its_kernel_without_a_compile_notice_and_starts_once(tmp_path):
    out = _check(tmp_path)
    assert out == {"started": True, "same": True, "notices": []}
    # it did compile (an empty cache): the notice's silence is not for want of a compile
    assert any("ready" in p.name and p.suffix == ".nbi" for p in tmp_path.rglob("*")), list(tmp_path.rglob("*"))


def test_signsim_ready_0_starts_nothing(tmp_path):
    assert _check(tmp_path, SIGNSIM_READY="0") == {"started": False, "same": True, "notices": []}
    assert not any("ready" in p.name for p in tmp_path.rglob("*"))

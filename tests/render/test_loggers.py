"""``--log`` (issue 34, item 6): a run's history and tracked quantities in an experiment tracker, the same numbers
as the results document. TensorBoard's event files are read back here by a reader of their record format written
from its specification (length, masked CRC-32C, an ``Event`` protocol buffer, CRC), not by the writer's code;
W&B and MLflow are stood in for by modules that record the calls, since neither is a test dependency."""

from __future__ import annotations

import importlib.machinery
import math
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import signsim

pytest.importorskip("tensorboardX")


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(folder: Path) -> dict[str, dict[int, float]]:
    """tag -> {step: value} of every scalar in the TFRecord event files under ``folder`` (checksums checked)."""
    from tensorboardX.proto.event_pb2 import Event

    out: dict[str, dict[int, float]] = {}
    files = sorted(folder.glob("events.out.tfevents.*"))
    assert files, f"no event file in {folder}"
    for path in files:
        data = path.read_bytes()
        at = 0
        while at < len(data):
            header = data[at:at + 8]
            (length,) = struct.unpack("<Q", header)
            (crc,) = struct.unpack("<I", data[at + 8:at + 12])
            assert crc == _masked(header)
            body = data[at + 12:at + 12 + length]
            (crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
            assert crc == _masked(body)
            at += 16 + length
            event = Event.FromString(body)
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.setdefault(value.tag, {})[event.step] = value.simple_value
    return out


def _expected(doc: dict) -> dict[str, dict[int, float]]:
    want: dict[str, dict[int, float]] = {}
    for row in doc["history"]:
        for k, v in row.items():
            if k != "iter" and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                want.setdefault(k, {})[row["iter"]] = v
    for quantity, rows in doc["tracks"].items():
        for row in rows:
            for k, v in row.items():
                if k != "iter" and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    want.setdefault(f"{quantity}/{k}", {})[row["iter"]] = v
    return want


def test_tensorboard_holds_the_results_history_and_tracks(tmp_path, cli):
    r = cli("run", "--problem", "logistic", "--method", "signum", "--iters", "60", "--track-spb", "20",
            "--track-diversity", "30", "--log", f"tensorboard:{tmp_path / 'tb'}", "--out", tmp_path / "r.json",
            "--quiet")
    assert r.code == 0, r.err
    import json

    doc = json.loads((tmp_path / "r.json").read_text())
    got, want = read_events(tmp_path / "tb"), _expected(doc)
    assert set(got) == set(want) and {"loss", "test_acc", "spb/rho_min", "diversity/B_S"} <= set(got)
    for tag, steps in want.items():
        assert sorted(got[tag]) == sorted(steps), tag  # every recorded row, no other step
        for step, value in steps.items():  # TensorBoard stores a float32
            assert got[tag][step] == np.float32(value), (tag, step)
    # a row that did not measure a field (NaN in the results) has no point rather than a NaN
    nan_rows = [row["iter"] for row in doc["history"] if not math.isfinite(row.get("test_acc", math.nan))]
    assert all(step not in got["test_acc"] for step in nan_rows)


def test_a_comparison_logs_one_folder_per_variant(tmp_path):
    config = {"problem": "quadratic", "iters": 30, "compare": [{"label": "sign vote", "method": "signsgd"},
                                                                 {"label": "sgd", "method": "sgd"}]}
    doc = signsim.run(config, log=[f"tensorboard:{tmp_path}"]).to_dict()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sgd", "sign_vote"]
    for name, run in zip(("sign_vote", "sgd"), doc["runs"], strict=True):
        got = read_events(tmp_path / name)
        assert got["loss"] == {row["iter"]: np.float32(row["loss"]) for row in run["history"]}


@pytest.mark.parametrize("value, words", [
    ("neptune:x", "--log neptune:x: choose tensorboard:DIR"),
    ("tensorboard", "--log tensorboard: give the DIR"),
    ("tensorboard:", "--log tensorboard:: give the DIR"),
    ("wandb:", "--log wandb:: an empty PROJECT"),
])
def test_a_bad_target_is_one_line_before_the_run(cli, value, words):
    r = cli("run", "--iters", "5", "--log", value, "--quiet")
    assert r.code == 2 and r.err.strip().endswith(r.err.strip().splitlines()[-1]) and words in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1


def test_a_tensorboard_folder_that_is_a_file_or_a_missing_library_is_refused(cli, tmp_path, monkeypatch):
    (tmp_path / "f").write_text("")
    r = cli("run", "--iters", "5", "--log", f"tensorboard:{tmp_path / 'f'}")
    assert r.code == 2 and f"--log tensorboard:{tmp_path / 'f'}: it is not a directory" in r.err
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    r = cli("run", "--iters", "5", "--log", "wandb")
    assert r.code == 2 and "--log wandb: needs wandb, which is not installed" in r.err, r.err


def _fake(name: str, calls: list) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return mod


def test_wandb_gets_each_step_once_in_increasing_order(monkeypatch):
    calls: list = []
    wandb = _fake("wandb", calls)

    class Session:
        def log(self, values, step):
            calls.append(("log", step, dict(values)))

        def finish(self):
            calls.append(("finish",))

    def init(**kw):
        calls.append(("init", kw))
        return Session()

    wandb.init = init
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    doc = signsim.run(problem="logistic", iters=40, track_spb=10, log="wandb:proj").to_dict()
    assert calls[0][0] == "init" and calls[0][1]["project"] == "proj" and calls[0][1]["config"]["iters"] == 40
    steps = [c[1] for c in calls if c[0] == "log"]
    assert steps == sorted(set(steps)) and calls[-1] == ("finish",)
    logged = {c[1]: c[2] for c in calls if c[0] == "log"}
    for row in doc["history"]:
        assert logged[row["iter"]]["loss"] == row["loss"]
    for row in doc["tracks"]["spb"]:
        assert logged[row["iter"]]["spb/rho_min"] == row["rho_min"]


def test_mlflow_gets_the_config_and_the_metrics(monkeypatch):
    calls: list = []
    mlflow = _fake("mlflow", calls)

    class Run:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            calls.append(("end",))

    mlflow.set_experiment = lambda name: calls.append(("experiment", name))
    mlflow.start_run = lambda run_name=None: calls.append(("start", run_name)) or Run()
    mlflow.log_params = lambda params: calls.append(("params", params))
    mlflow.log_metrics = lambda metrics, step: calls.append(("metrics", step, metrics))
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    doc = signsim.run(iters=20, log=["mlflow:exp"]).to_dict()
    assert calls[:2] == [("experiment", "exp"), ("start", None)] and calls[-1] == ("end",)
    assert calls[2][0] == "params" and calls[2][1]["method"] == doc["config"]["method"]
    final = [c for c in calls if c[0] == "metrics"][-1]
    assert final[1] == doc["history"][-1]["iter"] and final[2]["loss"] == doc["history"][-1]["loss"]


def test_a_trackers_own_failure_is_one_line_after_the_results_are_written(monkeypatch, cli, tmp_path):
    """MLflow refusing a file store raised a 74-line traceback (exit 1): now one line naming the target, exit 2, with
    the results file already written."""
    calls: list = []
    mlflow = _fake("mlflow", calls)

    def refuse(name):
        raise RuntimeError("Filesystem tracking backend is deprecated.\nSet MLFLOW_ALLOW_FILE_STORE=true\n  at line 3")

    mlflow.set_experiment = refuse
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    out = tmp_path / "r.json"
    r = cli("run", "--iters", "5", "--log", "mlflow:exp", "--out", out, "--quiet")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert "--log mlflow:exp" in lines[0] and "Filesystem tracking backend is deprecated" in lines[0], lines[0]
    assert out.is_file()


def test_tensorboard_on_a_full_disk_is_one_line_not_a_hang(tmp_path):
    """Every event write fails as on a full disk. tensorboardX's SummaryWriter wrote from a thread through a queue
    of 10 events: the thread died, and the run hung deaf to signals waiting for it (13 minutes until SIGKILL). The
    events are now written in the calling thread: one line naming the target, exit 2, the results written."""
    import subprocess

    code = ("import errno, sys\n"
            "from tensorboardX import event_file_writer\n"
            "def full(self, event):\n"
            "    raise OSError(errno.ENOSPC, 'No space left on device')\n"
            "event_file_writer.EventsWriter.write_event = full\n"
            "from signsim.cli import main\n"
            "main(['run', '--iters', '5', '--quiet', '--out', sys.argv[2], '--log', 'tensorboard:' + sys.argv[1]])\n")
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "tb"), str(out)], capture_output=True, text=True,
                       timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "--log tensorboard:" in lines[0] and "No space left on device" in lines[0] and out.is_file()

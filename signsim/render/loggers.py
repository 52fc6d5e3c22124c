"""``--log``: a run's results sent to the experiment tracker a researcher already uses (TensorBoard, Weights &
Biases, MLflow). What goes there is the results document itself, read after the run (an interrupted run's
partial history included): every numeric field of every history row as a scalar at step = its iteration, the
same for each tracked quantity (``spb/rho_min``, ``diversity/B_S``, ...), and the run's config. Nothing is
computed here, so the tracker shows exactly the numbers of the results file, but for the non-finite ones (a
field a row did not measure, such as a test accuracy between evaluations, or a diverged loss: the results'
``status`` says so), which are left out.

Targets (``--log`` is repeatable): ``tensorboard:DIR`` (event files written by tensorboardX, the optional extra
``signsim[log]``; a comparison writes one sub-folder per variant, named by its label), ``wandb[:PROJECT]`` and
``mlflow[:EXPERIMENT]`` (their own libraries, when installed; they take their settings, such as the tracking
server or the offline mode, from their own environment variables). Each target is checked before the run: an
unknown one, a missing library or a folder that cannot be written is one error line.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signsim.errors import InputError

#: target -> (the library it needs, whether its argument is required, what the argument is)
KINDS = {"tensorboard": ("tensorboardX", True, "DIR"), "wandb": ("wandb", False, "PROJECT"),
         "mlflow": ("mlflow", False, "EXPERIMENT")}
#: how to get each library
INSTALL = {"tensorboardX": "pip install 'signsim[log]'", "wandb": "pip install wandb", "mlflow": "pip install mlflow"}


@dataclass(frozen=True)
class Target:
    kind: str
    where: str | None  # tensorboard's folder, wandb's project, mlflow's experiment (None: the library's default)
    written: str  # as the user wrote it, for errors


def parse(values: list[str] | str | None) -> list[Target]:
    """The ``--log`` values as targets, each checked (known kind, its argument, its library importable, a
    tensorboard folder that can be made): InputError naming the value otherwise."""
    if values is None:
        return []
    targets = []
    for value in [values] if isinstance(values, str) else list(values):
        text = str(value)
        kind, sep, where = text.strip().partition(":")
        where = where.strip() if sep else None
        if kind not in KINDS:
            raise InputError(f"--log {text}: choose tensorboard:DIR, wandb[:PROJECT] or mlflow[:EXPERIMENT]")
        library, required, what = KINDS[kind]
        if required and not where:
            raise InputError(f"--log {text}: give the {what}, as in {kind}:{what}")
        if sep and not where:
            raise InputError(f"--log {text}: an empty {what}; leave out the ':' for the library's default")
        if importlib.util.find_spec(library) is None:
            raise InputError(f"--log {text}: needs {library}, which is not installed ({INSTALL[library]})")
        if kind == "tensorboard":
            from signsim.paths import home_expanded, output_dir

            folder = str(home_expanded(where, f"--log {kind}:"))
            try:
                output_dir(folder, "--log")
            except InputError as e:  # named as written: "--log tensorboard:DIR: ..."
                raise InputError(str(e).replace(f"--log {folder}", f"--log {text}", 1)) from None
            where = folder
        targets.append(Target(kind, where, text))
    return targets


def runs_of(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, run document) of each run in ``doc``: a comparison's variants by their labels, else the run."""
    if "comparison" in doc:
        return [(r.get("label") or f"run-{i}", r) for i, r in enumerate(doc["runs"])]
    return [("", doc)]


def scalars(run: dict[str, Any]) -> list[tuple[int, dict[str, float]]]:
    """(iteration, {name: value}) in increasing iteration, one entry per iteration holding its history row and
    its tracked rows: every field that is a number (a bool or a text is not a scalar), tracked ones named
    ``quantity/field`` (a tracker such as W&B takes the steps of one run in increasing order only)."""
    steps: dict[int, dict[str, float]] = {}
    for row in run.get("history") or []:
        steps.setdefault(int(row["iter"]), {}).update(_numbers(row, ""))
    for quantity, rows in (run.get("tracks") or {}).items():
        for row in rows:
            steps.setdefault(int(row["iter"]), {}).update(_numbers(row, f"{quantity}/"))
    return sorted(steps.items())


def _numbers(row: dict[str, Any], prefix: str) -> dict[str, float]:
    return {prefix + k: float(v) for k, v in row.items()
            if k != "iter" and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def send(doc: dict[str, Any], targets: list[Target]) -> None:
    """Write ``doc``'s runs to every target; a tracker's own failure (a store it refuses, a full disk, a network
    error) is one line naming the target (InputError), after the results file was written."""
    for target in targets:
        for name, run in runs_of(doc):
            try:
                WRITERS[target.kind](target, name, run)
            except Exception as e:  # noqa: BLE001 - the tracking library's, of any type
                lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
                what = f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
                raise InputError(f"--log {target.written}: {KINDS[target.kind][0]} failed ({what}); the results "
                                 "were written, but not to this tracker") from None


def _safe(name: str) -> str:
    """A variant's label as a folder name."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", name).strip("._") or "run"


def _config(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (run.get("config") or {}).items() if v is not None}


def _tensorboard(target: Target, name: str, run: dict[str, Any]) -> None:
    # the event file written in this thread (tensorboardX's SummaryWriter hands events to a writer thread through a
    # queue of 10: when that thread dies, on a full disk, add_scalar and close wait for it forever)
    import time

    from tensorboardX.event_file_writer import EventsWriter
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.record_writer import directory_check
    from tensorboardX.summary import scalar, text

    folder = Path(target.where) / _safe(name) if name else Path(target.where)
    directory_check(str(folder))
    events = EventsWriter(str(folder / "events"))
    try:
        config = "```\n" + json.dumps(_config(run), indent=1, default=str) + "\n```"
        events.write_event(Event(wall_time=time.time(), step=0, summary=text("config", config)))
        for step, values in scalars(run):
            for key, value in values.items():
                events.write_event(Event(wall_time=time.time(), step=step, summary=scalar(key, value)))
    finally:
        events.close()


def _wandb(target: Target, name: str, run: dict[str, Any]) -> None:
    import wandb

    session = wandb.init(project=target.where, name=name or None, config=_config(run), reinit=True)
    try:
        for step, values in scalars(run):
            session.log(values, step=step)
    finally:
        session.finish()


def _mlflow(target: Target, name: str, run: dict[str, Any]) -> None:
    import mlflow

    if target.where:
        mlflow.set_experiment(target.where)
    with mlflow.start_run(run_name=name or None):
        mlflow.log_params({k: str(v) for k, v in _config(run).items()})
        for step, values in scalars(run):
            mlflow.log_metrics(values, step=step)


WRITERS = {"tensorboard": _tensorboard, "wandb": _wandb, "mlflow": _mlflow}

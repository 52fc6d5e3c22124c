"""alie-opt[:EVALS:START:DELTA:RATIO]: ALIE with its factor chosen each round by a line search (ByzFL's
Optimal_ALittleIsEnough; docs/theory.md §8.5): the Byzantine rows become mu_i - z sd_i (as ``alie``), with the z that
puts the aggregate, after the run's own pre-aggregations and aggregation, farthest (Euclidean) from the honest mean,
found by the loop's expansion-contraction search from z = START with step DELTA (doubled on success, times RATIO on
failure) in EVALS evaluations. Omniscient."""

from signsim.stages.attacks import alie
from signsim.stages.base import Param

NAME = "alie-opt"
PARAMS = (Param("evals", "int", default=20, low=1, high=1000), Param("start", default=0.0, low=0.0),
          Param("delta", default=10.0, low=0.0, low_open=True),
          Param("ratio", default=0.8, low=0.5, high=1.0, low_open=True, high_open=True))
SUMMARY = "alie with the z that moves the aggregate farthest from the honest mean (line search each round)"
THEORY = "§8.5"
OMNISCIENT = True
SEARCH = True  # the loop searches the factor, then calls rows with it in p[0]

row = alie.row
rows = alie.rows
reference = alie.reference
reference_rows = alie.reference_rows

"""ipm-opt[:EVALS:START:DELTA:RATIO]: IPM with its factor chosen each round by a line search (ByzFL's
Optimal_InnerProductManipulation; docs/theory.md §8.5): the Byzantine rows become -eps times the honest mean (as
``ipm``), with the eps that puts the aggregate, after the run's own pre-aggregations and aggregation, farthest
(Euclidean) from the honest mean, found by the loop's expansion-contraction search (see ``alie-opt``). Omniscient."""

from signsim.stages.attacks import alie_opt, ipm

NAME = "ipm-opt"
PARAMS = alie_opt.PARAMS
SUMMARY = "ipm with the eps that moves the aggregate farthest from the honest mean (line search each round)"
THEORY = "§8.5"
OMNISCIENT = True
SEARCH = True  # the loop searches the factor, then calls rows with it in p[0]

row = ipm.row
rows = ipm.rows
reference = ipm.reference
reference_rows = ipm.reference_rows

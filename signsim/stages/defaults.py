"""The functions a stage module may leave out (``kinds.Call.optional``), each as the stages that leave it out behave:
the stage functions the loop calls take them from here (``signsim.engine.stage_kernels.stage_function``)."""


def sends(k, v, e, p):
    """Error feedback: the worker sends every round (only a LAZY one, CLAG, may hold back; docs/theory.md §8.2)."""
    return True


def fresh(k, hbar, p, gen):
    """Gradient estimator: no round in which every worker sends its exact gradient (MARINA's, §8.10)."""
    return False


def work(n, d, p):
    """A server stage (aggregation, pre-aggregation): the elementary operations of one call on n messages of d
    coordinates, a lower bound the run's work estimate adds per round (``signsim.resources.run_work``): reading
    every coordinate of every message once. The rules that compare messages pairwise declare more."""
    return n * d


def memory(n, d, p):
    """A server stage: the bytes one call allocates besides its inputs (``signsim.resources.check_run``): none."""
    return 0

"""The system model of a run (docs/theory.md §14): the workers' compute times and links (``laws``), the model as a
run's options give it (``model``), and what the results report of the simulated clock (``report``). The clock itself
runs in the compiled loop (``signsim.engine.clock``)."""

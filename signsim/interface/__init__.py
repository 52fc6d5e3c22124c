"""What users hand to signsim and what they get back: the option table (``options``), the run's config
(``config``), the one check of its composition (``composition``) and its ``[experiment]`` table
(``experiment_config``), the transform specs of the diagnostics (``transform_specs``), the JSON results
(``results``) and how Ctrl-C and SIGTERM stop a run (``interrupts``). The files read and written atomically are
``signsim.paths``'s, and the "did you mean" of every unknown name ``signsim.suggest``'s: the modules of every layer
use them."""

"""The attacks stages, one module each (see ``signsim.stages.base`` for what a module declares)."""

"""Sweeps: grids of runs, executed locally or on a Dask cluster, into tidy, resumable results (issue #7)."""

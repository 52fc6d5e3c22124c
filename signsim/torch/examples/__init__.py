"""Model files to start from (``signsim run --model signsim/torch/examples/digits_mlp.py``; docs/api.md)."""

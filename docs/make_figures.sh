#!/usr/bin/env bash
# Regenerates docs/figures/*.png from configs/paper/*.toml (seed 0; the README states what each shows).
# Run from the repository root with signsim installed:  bash docs/make_figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
fig=docs/figures
mkdir -p "$fig"
for name in rosenbrock-noise rosenbrock-majority sign-trap vote-trap byzantine digits-mlp compressors heavy-tails \
    rosenbrock-batch many-workers many-workers-gaussian many-workers-byzantine; do
  signsim run --config "configs/paper/$name.toml" --out "$out/$name.json" --quiet
done
signsim plot "$out/rosenbrock-noise.json" --out "$fig/rosenbrock-noise.png"
signsim plot "$out/rosenbrock-majority.json" --x workers --y loss --out "$fig/rosenbrock-majority.png"
signsim plot "$out/sign-trap.json" --y distance --out "$fig/sign-trap.png"
signsim plot "$out/vote-trap.json" --y distance --out "$fig/vote-trap.png"
signsim plot "$out/byzantine.json" --y loss --out "$fig/byzantine.png"
signsim plot "$out/digits-mlp.json" --x megabytes --y accuracy --out "$fig/digits-mlp.png"
# your own PyTorch model (needs torch: pip install 'signsim[torch]')
signsim run --config configs/paper/torch-digits-cnn.toml --out "$out/torch-digits-cnn.json" --quiet
signsim plot "$out/torch-digits-cnn.json" --x megabytes --y accuracy --out "$fig/torch-digits-cnn.png"
signsim diversity --config configs/paper/torch-cnn-heuristics.toml --at run:800 --out "$out/torch-cnn-heuristics.json" \
    --quiet
signsim plot "$out/torch-cnn-heuristics.json" --out "$fig/torch-cnn-heuristics.png"
signsim plot "$out/compressors.json" --x megabytes --y accuracy --out "$fig/compressors.png"
signsim plot "$out/heavy-tails.json" --y loss --out "$fig/heavy-tails.png"
signsim plot "$out/rosenbrock-batch.json" --x batch-size --y spb-fraction --out "$fig/rosenbrock-batch-spb.png"
signsim plot "$out/rosenbrock-batch.json" --x batch-size --y loss --out "$fig/rosenbrock-batch-loss.png"
signsim plot "$out/many-workers.json" --x workers --y loss --out "$fig/many-workers.png"
signsim plot "$out/many-workers-gaussian.json" --x workers --y loss --out "$fig/many-workers-gaussian.png"
signsim plot "$out/many-workers-byzantine.json" --x byzantine --y loss --out "$fig/many-workers-byzantine.png"
signsim diversity --config configs/paper/diversity-replication.toml --out "$out/replication.json" --quiet
signsim plot "$out/replication.json" --out "$fig/diversity-replication.png"
for name in diversity-dimension diversity-heuristics diversity-heuristics-mlp stability-logistic stability-mlp \
    sparse-conflicts lower-bound; do
  signsim diversity --config "configs/paper/$name.toml" --out "$out/$name.json" --quiet
  signsim plot "$out/$name.json" --out "$fig/$name.png"
done
signsim sweep configs/paper/sparse-noise.toml --out "$out/sparse-noise" --quiet
signsim plot "$out/sparse-noise" --group-by method --y loss --out "$fig/sparse-noise.png"
signsim sweep configs/paper/robustness.toml --out "$out/robustness" --quiet
signsim plot "$out/robustness" --out "$fig/robustness.png"
signsim sweep configs/paper/noisy-sign-vote-trap.toml --out "$out/noisy-sign-vote-trap" --quiet
signsim plot "$out/noisy-sign-vote-trap" --x compressor --y distance --group-by method \
    --out "$fig/noisy-sign-vote-trap.png"
signsim sweep configs/paper/fedavg-digits.toml --out "$out/fedavg-digits" --quiet
signsim plot "$out/fedavg-digits" --x local-steps --y loss --group-by compressor --out "$fig/fedavg-digits.png"
signsim sweep configs/paper/participation-vote.toml --out "$out/participation-vote" --quiet
signsim plot "$out/participation-vote" --x participation --y loss --group-by split \
    --out "$fig/participation-vote.png"
for name in diana-exact diana-heterogeneous compressed-equal-bits; do
  signsim run --config "configs/paper/$name.toml" --out "$out/$name.json" --quiet
done
signsim plot "$out/diana-exact.json" --x bits --y distance --out "$fig/diana-exact.png"
signsim plot "$out/diana-heterogeneous.json" --x bits --y grad-norm --out "$fig/diana-heterogeneous.png"
signsim plot "$out/compressed-equal-bits.json" --x bits --y grad-norm --out "$fig/compressed-equal-bits.png"
signsim sweep configs/paper/scaffold-drift.toml --out "$out/scaffold-drift" --quiet
signsim plot "$out/scaffold-drift" --x local-steps --y grad-norm --group-by method --out "$fig/scaffold-drift.png"
echo "figures in $fig (intermediate results in $out)"

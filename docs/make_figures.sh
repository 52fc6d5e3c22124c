#!/usr/bin/env bash
# Regenerates docs/figures/*.png from configs/paper/*.toml (seed 0; the README states what each shows).
# Run from the repository root with signsim installed:  bash docs/make_figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
fig=docs/figures
mkdir -p "$fig"
for name in rosenbrock-noise rosenbrock-majority sign-trap vote-trap byzantine digits-mlp; do
  signsim run --config "configs/paper/$name.toml" --out "$out/$name.json" --quiet
done
signsim plot "$out/rosenbrock-noise.json" --out "$fig/rosenbrock-noise.png"
signsim plot "$out/rosenbrock-majority.json" --x workers --y loss --out "$fig/rosenbrock-majority.png"
signsim plot "$out/sign-trap.json" --y distance --out "$fig/sign-trap.png"
signsim plot "$out/vote-trap.json" --y distance --out "$fig/vote-trap.png"
signsim plot "$out/byzantine.json" --y loss --out "$fig/byzantine.png"
signsim plot "$out/digits-mlp.json" --x megabytes --y accuracy --out "$fig/digits-mlp.png"
signsim diversity --config configs/paper/diversity-replication.toml --out "$out/replication.json" --quiet
signsim plot "$out/replication.json" --out "$fig/diversity-replication.png"
echo "figures in $fig (intermediate results in $out)"

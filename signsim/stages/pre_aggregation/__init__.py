"""Pre-aggregations (docs/theory.md §8.9): rules that transform the round's messages before the aggregation, chained in
the order ``--pre-aggregate`` names them (ByzFL's pre-aggregators). One module each."""

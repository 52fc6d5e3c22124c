"""Diagnostics: success probabilities and SPB (docs/theory.md §1), norms; pure functions returning plain numbers
(Cockpit-style quantities: they compute, others render)."""

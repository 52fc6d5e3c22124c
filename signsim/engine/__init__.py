"""The compiled simulation loop and the Python driver around it (docs/theory.md §2)."""

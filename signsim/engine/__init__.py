"""The compiled simulation loop and the Python driver around it (math.md §2)."""

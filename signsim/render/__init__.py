"""Presentation: Rich tables and progress bars, matplotlib figures. Imported lazily by the CLI."""

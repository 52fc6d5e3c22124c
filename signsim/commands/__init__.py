"""One function per command: takes a resolved config, returns a plain result (no printing)."""

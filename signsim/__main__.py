"""``python -m signsim``: the command line, as ``signsim``."""

from signsim.cli import main

if __name__ == "__main__":
    main()

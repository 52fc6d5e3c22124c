"""The one error type that means "the user asked for something impossible".

The CLI turns it into exit code 2 and a single line on stderr; nothing else should be raised for bad input.
"""


class InputError(ValueError):
    """Bad input: unknown names, impossible numbers, malformed or missing files.

    The message must name the option, file or field and say what is wrong, in one line.
    """


class MemoryLimit(InputError):
    """Bad input of one kind: what was asked for would not fit in the memory available (``signsim.resources``)."""

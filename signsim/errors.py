"""The one error type that means "the user asked for something impossible".

The CLI turns it into exit code 2 and a single line on stderr; nothing else should be raised for bad input.
"""


class InputError(ValueError):
    """Bad input: unknown names, impossible numbers, malformed or missing files.

    The message must name the option, file or field and say what is wrong, in one line: a line break or other
    control character the user wrote (echoed in the message) is shown escaped, as ``\\n``.
    """

    def __init__(self, message: object = "", *args: object) -> None:
        text = str(message)
        if any(c < " " for c in text):
            text = "".join(c if c >= " " else repr(c)[1:-1] for c in text)
        super().__init__(text, *args)


class MemoryLimit(InputError):
    """Bad input of one kind: what was asked for would not fit in the memory available (``signsim.resources``)."""


def shown(value: object) -> str:
    """A value as a message shows what the user wrote: ``''`` for an empty or blank string."""
    return "''" if isinstance(value, str) and not value.strip() else str(value)

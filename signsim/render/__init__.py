"""Presentation: Rich tables and progress bars, matplotlib figures. Imported lazily by the CLI."""


def where(point: str) -> str:
    """'at init', 'after 500 iterations of ssdm', 'on 1000 given samples' (a point as documents name it)."""
    if point.startswith("after "):
        return point
    if point.endswith(" given samples"):
        return f"on {point}"
    return f"at {point}"

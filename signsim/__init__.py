"""signsim: simulate sign-based, 1-bit distributed optimization and the statistics behind it.

The mathematics is in ``shared/reference/math.md`` (cited below as "math.md §N").
"""

__version__ = "0.1.0"

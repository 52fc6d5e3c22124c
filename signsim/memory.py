"""How much memory this process may still use, and the check of one need against it (an InputError naming the need
and what to reduce): the base of ``signsim.resources``' estimates, and of the checks of files before they are read
(``signsim.paths.input_file``)."""

from __future__ import annotations

import math
import os
import resource

from signsim.errors import InputError
from signsim.numbers import to_float

#: keep this fraction of the available memory as headroom
HEADROOM = 0.8


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cgroup_available() -> int | None:
    try:
        limit = open("/sys/fs/cgroup/memory.max").read().strip()
        used = open("/sys/fs/cgroup/memory.current").read().strip()
    except OSError:
        return None
    if limit == "max":
        return None
    return max(0, int(limit) - int(used))


def _rlimit_available() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        used = 0
    return max(0, soft - used)


def available_bytes() -> int:
    """The smallest of: the system's available memory, the cgroup's remaining limit, the address-space limit."""
    override = os.environ.get("SIGNSIM_MEMORY_LIMIT")  # a testing aid: pretend only this many bytes are free
    candidates = [c for c in (_meminfo_available(), _cgroup_available(), _rlimit_available()) if c is not None]
    if override:
        try:
            limit = to_float(override)
        except ValueError:
            limit = math.nan
        if not (math.isfinite(limit) and limit >= 0):
            raise InputError(f"SIGNSIM_MEMORY_LIMIT={override}: must be a number of bytes >= 0")
        candidates.append(int(limit))
    return min(candidates) if candidates else 1 << 62


def fmt(nbytes: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{int(nbytes)} bytes"


def require(nbytes: float, what: str, reduce: str) -> None:
    """InputError (``MemoryLimit``) when ``nbytes`` exceeds the memory this process can use (with headroom)."""
    from signsim.errors import MemoryLimit

    avail = available_bytes()
    if nbytes > HEADROOM * avail:
        raise MemoryLimit(f"{what} needs about {fmt(nbytes)} of memory, {fmt(avail)} available; {reduce}")

"""Memory estimates before large allocations (private module).

A computation that would not fit is refused *before* it starts, with its size and
an alternative, instead of failing (or swapping) half way.
"""

from __future__ import annotations

import os
import time

from bnfisher.exceptions import ResourceError

__all__: list[str] = []

#: Share of the available memory one allocation may take.
FRACTION = 0.8


_CACHE: list = [-1.0, 0]  # (time read, bytes): /proc/meminfo is read at most every 0.2 s (a read costs ~20 us)


def available_memory() -> int:
    """Bytes of memory available now: the tightest of ``MemAvailable``, a cgroup limit and ``ulimit -v``."""
    now = time.monotonic()
    if now - _CACHE[0] < 0.2:
        return int(_CACHE[1])
    _CACHE[0], _CACHE[1] = now, _read_available()
    return int(_CACHE[1])


def _read_available() -> int:
    """Return the tightest of MemAvailable, the room under a cgroup limit and the room under ulimit -v."""
    limits = [_meminfo_available(), _cgroup_available(), _address_space_available()]
    return min(limit for limit in limits if limit is not None)


def _cgroup_available() -> int | None:
    """Room left under a cgroup memory limit (v2, then v1), if one is set."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as handle:
                text = handle.read().strip()
            if text == "max":
                return None
            with open(usage_file) as handle:
                usage = int(handle.read().strip())
            limit = int(text)
            if limit >= 1 << 60:  # v1 writes a huge number for "no limit"
                return None
            return max(limit - usage, 0)
        except (OSError, ValueError):
            continue
    return None


def _address_space_available() -> int | None:
    """Room left under ``ulimit -v`` / ``prlimit --as`` (RLIMIT_AS), if one is set."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as handle:
            used = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - not Linux
        used = 0
    return max(soft - used, 0)


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    try:  # pragma: no cover - not Linux
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 1 << 62


def _size(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return ""  # pragma: no cover


def check_allocation(n_bytes: float, what: str, alternative: str) -> None:
    """Raise a ResourceError when ``n_bytes`` exceed the share of available memory one allocation may take."""
    available = available_memory()
    if n_bytes > FRACTION * available:
        raise ResourceError(f"{what} would need {_size(n_bytes)}, but {_size(available)} of memory is available; "
                            f"{alternative}")

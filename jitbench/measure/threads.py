"""Give NumPy and XLA the same cores: pin the process and size the BLAS/OpenMP pools.

Threads decide the answer on a small machine: NumPy's `a @ b` at n=700 took 25–33 ms with
OpenBLAS's default two threads while another process kept a core busy, and 8.4 ms with one
thread, in the same minute. XLA's CPU pool competes the same way, and its size cannot be
changed once the backend has started (in jax 0.10 `--xla_cpu_multi_thread_eigen=false` no
longer keeps a jitted matmul on one core either). So `limited_threads(n)` does what holds for
both libraries at any time: it pins every thread of the process (and every thread started
later) to `n` cores with `sched_setaffinity`, and sets the BLAS/OpenMP pools to `n` threads
with threadpoolctl so NumPy does not put more threads than cores on them. The cores are the
least busy of those allowed (over a 50 ms window; ties broken by the process id), so two
runs on one machine do not both pin themselves to core 0.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jitbench.errors import ConfigError
from jitbench.measure import machine


@dataclass(frozen=True, kw_only=True)
class ThreadState:
    """What the measured code ran with.

    Attributes:
        requested: the `--threads` value; None means the libraries' own defaults.
        cores: the CPU ids the process was pinned to (all allowed ones when not pinned).
        pinned: whether jitbench pinned the threads (False where the OS cannot).
        blas: each BLAS/OpenMP pool threadpoolctl sees: library, API, threads, version.
        xla_flags: `XLA_FLAGS` as the backend saw it ('' when unset).
    """

    requested: int | None
    cores: tuple[int, ...]
    pinned: bool
    blas: tuple[dict[str, Any], ...]
    xla_flags: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "cores": list(self.cores),
            "pinned": self.pinned,
            "blas": [dict(b) for b in self.blas],
            "xla_flags": self.xla_flags,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThreadState:
        """Read `to_dict` output (a run's `environment["threads"]`); never raises: a
        malformed field takes an empty value."""
        requested = data.get("requested")
        cores = data.get("cores")
        blas = data.get("blas")
        return cls(
            requested=requested if isinstance(requested, int) and requested > 0 else None,
            cores=tuple(c for c in cores if isinstance(c, int)) if isinstance(cores, list) else (),
            pinned=data.get("pinned") is True,
            blas=tuple(dict(b) for b in blas if isinstance(b, Mapping))
            if isinstance(blas, list)
            else (),
            xla_flags=str(data.get("xla_flags") or ""),
        )

    @property
    def summary(self) -> str:
        """One line for a table header, e.g. '1 thread (core 0; openblas 1)'."""
        if self.requested is None:
            count = f"library defaults on {len(self.cores)} core(s)"
        else:
            count = f"{self.requested} thread{'s' if self.requested != 1 else ''}"
        # numpy and scipy may each load their own OpenBLAS: name a pool size once.
        pools = ", ".join(
            dict.fromkeys(f"{b.get('internal_api')} {b.get('num_threads')}" for b in self.blas)
        )
        where = f"core{'s' if len(self.cores) != 1 else ''} {core_ranges(self.cores)}"
        if self.requested is not None and not self.pinned:
            where += ", not pinned"
        details = "; ".join(x for x in (where if self.cores else "", pools) if x)
        return f"{count} ({details})" if details else count


def recorded_summary(env: Mapping[str, Any]) -> str | None:
    """The summary of the thread state a run recorded (environment["threads"]); None for
    runs written before jitbench recorded it."""
    data = env.get("threads")
    return ThreadState.from_dict(data).summary if isinstance(data, Mapping) else None


def core_ranges(cores: tuple[int, ...]) -> str:
    """'0-3,6' for (0, 1, 2, 3, 6)."""
    runs: list[list[int]] = []
    for c in sorted(cores):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def allowed_cores() -> tuple[int, ...]:
    """The CPU ids this process may run on (all of them where affinity is unsupported)."""
    if hasattr(os, "sched_getaffinity"):
        return tuple(sorted(os.sched_getaffinity(0)))
    return tuple(range(os.cpu_count() or 1))


def blas_pools() -> tuple[dict[str, Any], ...]:
    """The BLAS/OpenMP pools loaded in this process, as threadpoolctl reports them."""
    from threadpoolctl import threadpool_info

    keep = ("user_api", "internal_api", "num_threads", "version", "threading_layer")
    return tuple({k: info.get(k) for k in keep} for info in threadpool_info())


def current_state(requested: int | None = None, *, pinned: bool = False) -> ThreadState:
    """The thread setting in force now (for `jitbench env` and the run record)."""
    return ThreadState(
        requested=requested,
        cores=allowed_cores(),
        pinned=pinned,
        blas=blas_pools(),
        xla_flags=os.environ.get("XLA_FLAGS", ""),
    )


def choose_cores(
    n: int, allowed: tuple[int, ...], busy: Mapping[int, int] | None, *, start: int = 0
) -> set[int]:
    """The `n` least busy of the `allowed` cores; among equally busy ones, those from the
    `start`-th allowed core on (wrapping round), so runs started together with different
    `start`s (their pids) spread over idle cores instead of all taking the lowest id.
    The first `n` from `start` when how busy they are is unknown."""
    order = sorted(allowed)
    rank = {c: (i - start) % len(order) for i, c in enumerate(order)}
    return set(sorted(order, key=lambda c: ((busy or {}).get(c, 0), rank[c]))[:n])


def _pin_all_threads(cores: set[int]) -> bool:
    """Pin every existing thread of the process (and so the threads they start) to `cores`."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    done = False
    for tid in tids:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(tid, cores)
            done = True
    return done


@contextlib.contextmanager
def limited_threads(n: int | None, *, cores: set[int] | None = None) -> Iterator[ThreadState]:
    """Run the block on `n` cores with `n` BLAS/OpenMP threads; None changes nothing.

    The `n` least busy allowed cores are used (`choose_cores`), or `cores` when given (the
    two workers of an interleaved comparison share theirs). Affinity and pool sizes
    are restored afterwards. Yields what was in force inside the block.

    Raises:
        ConfigError: `n` is more than the cores this process may use.
    """
    if n is None:
        yield current_state(None)
        return
    from threadpoolctl import threadpool_limits

    allowed = allowed_cores()
    if n > len(allowed):
        raise ConfigError(
            f"--threads {n} is more than the {len(allowed)} core(s) this process may use "
            f"({core_ranges(allowed)}); pass --threads {len(allowed)} or fewer, or --threads all "
            "for the libraries' own defaults."
        )
    before = set(allowed)
    busy = machine.busy_by_core() if n < len(allowed) and not cores else None
    chosen = set(cores) if cores else choose_cores(n, allowed, busy, start=os.getpid())
    pinned = _pin_all_threads(chosen)
    from threadpoolctl import ThreadpoolController

    loaded = {lib.filepath for lib in ThreadpoolController().lib_controllers}
    try:
        with threadpool_limits(limits=n):
            yield current_state(n, pinned=pinned)
    finally:
        if pinned:
            _pin_all_threads(before)
        # A library first loaded inside the block (SciPy's OpenBLAS, imported by a
        # workload) took the limit and is not among those threadpoolctl restores: it
        # gets the default a fresh load has, one thread per allowed core.
        for lib in ThreadpoolController().lib_controllers:
            if lib.filepath not in loaded:
                with contextlib.suppress(Exception):
                    lib.set_num_threads(len(before))

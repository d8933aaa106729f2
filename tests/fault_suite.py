"""Workloads that fail on purpose, for the fault tests under tests/ (not a default suite).

Each one injects one fault: an input function that raises, outputs that are not arrays,
a NumPy side that raises, memory exhaustion on either side, sys.exit, a hang, a crash.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time

import numpy as np

from jitbench import workload

__jitbench_collect__ = False


def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def raising_inputs(rng, *, dtype, n):
    raise ValueError(f"input function broke at n={n}")


def huge_inputs(rng, *, dtype, n):
    return (np.ones(n, dtype=dtype),)


TINY = {"S": {"n": 32}}


@workload(inputs=vec, sizes={"S": {"n": 32}, "M": {"n": 64}})
def ok_double(xp, x):
    """A healthy workload."""
    return 2 * x


@workload(inputs=vec, sizes=TINY)
def ok_sleepy(xp, x):
    """Healthy but slow in Python (about 20 ms a call), so a run lasts long enough to stop."""
    time.sleep(0.02)
    return x + 1


@workload(inputs=raising_inputs, sizes=TINY)
def inputs_raise(xp, x):
    return x


@workload(inputs=vec, sizes=TINY)
def returns_string(xp, x):
    return "not an array"


@workload(inputs=vec, sizes=TINY)
def returns_none(xp, x):
    return None


def _numpy_raises(x):
    raise RuntimeError("numpy side failed")


@workload(inputs=vec, sizes=TINY, numpy=_numpy_raises)
def numpy_raises(x):
    return x * 3


# 10**14 float32 elements (400 TB): beyond x86-64's 128 TiB of user address space, so the
# request fails on any machine. 40 TB did not: where the kernel promises every allocation
# (vm.overcommit_memory=1, as on the GPU machines) it was granted, filled, and the process
# OOM-killed.
@workload(inputs=huge_inputs, sizes={"S": {"n": 32}, "XXL": {"n": 10**14}, "NEG": {"n": -5}})
def too_big(xp, x):
    return x + 1


def _numpy_small(x):
    return x * 1


@workload(inputs=vec, sizes=TINY, numpy=_numpy_small)
def jax_oom(x):
    import jax.numpy as jnp

    return jnp.ones(10**14, dtype=x.dtype) * x[0]  # a 400 TB output buffer (see too_big)


@workload(inputs=vec, sizes=TINY)
def calls_exit(xp, x):
    sys.exit(3)


@workload(inputs=vec, sizes=TINY)
def hangs(xp, x):
    """Never returns; touches $JITBENCH_HANG_MARKER first, so a test knows it hangs now."""
    marker = os.environ.get("JITBENCH_HANG_MARKER")
    if marker:
        open(marker, "a").close()
    while True:  # a Python loop that never returns (asleep: a busy one took a core from
        time.sleep(0.01)  # the other tests for the seconds each timeout waits)


@workload(inputs=vec, sizes=TINY)
def aborts(xp, x):
    os.abort()


def _interrupt_self() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, delivered to this process


@workload(inputs=vec, sizes=TINY)
def interrupted_in_trace(xp, x):
    """Sends itself SIGINT while JAX traces it (the start of a compile)."""
    import jax

    if isinstance(x, jax.core.Tracer):
        _interrupt_self()
    return x * 2


@workload(inputs=vec, sizes=TINY)
def interrupted_in_sampling(xp, x):
    """Sends itself SIGINT inside the timed sampling loop (the only place gc is off)."""
    if not gc.isenabled():
        _interrupt_self()
    return x * 2


class _SigtermOnDelete:
    # The signal handler then runs inside __del__, where Python reports and drops any
    # exception: the same trap as a signal landing in JAX's gc callback.
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)


_swallowed_once: list[bool] = []


def _numpy_side_swallowing_sigterm(x):
    if not _swallowed_once:
        _swallowed_once.append(True)
        _SigtermOnDelete()  # deleted at once
    return x + 1


@workload(inputs=vec, sizes=TINY, numpy=_numpy_side_swallowing_sigterm)
def sigterm_swallowed(x):
    """Sends SIGTERM to its own process from a __del__, so the handler's raise is lost."""
    return x + 1


@workload(inputs=vec, sizes=TINY)
def segfaults(xp, x):
    """Crashes the process with a segmentation fault (a NULL read in native code)."""
    import ctypes

    ctypes.string_at(0)
    return x


def nan_inputs(rng, *, dtype, n):
    return (np.full(n, np.nan, dtype=dtype),)


@workload(inputs=nan_inputs, sizes=TINY)
def all_nan(xp, x):
    """NaN in, NaN out on every side: validation passes and proves nothing."""
    return x * 2


@workload(inputs=vec, sizes=TINY)
def returns_generator(xp, x):
    return (v for v in (x, x))


@workload(inputs=vec, sizes=TINY)
def ignores_sigint(xp, x):
    """Sets SIGINT to ignored, as some libraries do, and is slow enough to be stopped."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(0.02)
    return x + 1


@workload(inputs=vec, sizes=TINY)
def exits_hard(xp, x):
    """Ends the process at once, with exit code 0, skipping every cleanup."""
    os._exit(0)


@workload(inputs=vec, sizes=TINY)
def spawns_and_hangs(xp, x):
    """Starts a process of its own (a `sleep`), then hangs; writes the sleeper's pid to
    $JITBENCH_SLEEPER_PID first, so a test can check it is gone after the timeout."""
    import subprocess

    sleeper = subprocess.Popen(["sleep", "300"])
    marker = os.environ.get("JITBENCH_SLEEPER_PID")
    if marker:
        with open(marker, "a") as fh:
            fh.write(f"{sleeper.pid}\n")
    while True:
        time.sleep(0.01)


_left: list[object] = []


@workload(inputs=vec, sizes=TINY)
def leaves_a_thread(xp, x):
    """Leaves a non-daemon thread that never ends (it would keep a process from exiting)."""
    import threading

    if not _left:
        thread = threading.Thread(target=time.sleep, args=(3600,), name="left-behind")
        thread.start()
        _left.append(thread)
    return x + 1


@workload(inputs=vec, sizes=TINY)
def forks(xp, x):
    """Calls a bare os.fork() (once) and waits for its child, which returns from here."""
    if os.environ.get("JITBENCH_FORKED_ONCE") != str(os.getpid()):
        os.environ["JITBENCH_FORKED_ONCE"] = str(os.getpid())
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
    return x + 1


@workload(inputs=vec, sizes=TINY)
def deletes_cwd(xp, x):
    """Deletes the working folder, where $JITBENCH_DELETE_CWD names it (and only then)."""
    import shutil

    here = os.environ.get("JITBENCH_DELETE_CWD")
    if here and os.path.isdir(here) and os.path.samefile(here, os.getcwd()):
        shutil.rmtree(here)
    return x + 1

"""Ready a process for measuring, once, before the first case's clock starts.

What a process does once (start the backend, import what the statistics import lazily)
must not be charged to the first case: not to its compile time, and not to its `--timeout`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from jitbench.measure.devices import warm_up_process


def warm_up(devices: Sequence[jax.Device]) -> None:
    """Compile and run a trivial function per device, and import scipy.special.

    `jitbench.stats` imports scipy.special on first use (a fifth of a second; more on a
    busy machine): inside the first case, where it would eat that case's time limit.
    """
    import scipy.special  # noqa: F401  (imported for its side effect: loaded once, here)

    warm_up_process(devices)

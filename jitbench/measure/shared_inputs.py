"""A case's inputs, made once per run and shared with the run's other processes.

The processes of a `--processes` run measure the same cases with the same seed, so each
would make the same inputs again: for the default suite's largest inputs (tens of MB of
random numbers) that cost each worker process about a second. Within
`compilation.sharing_compiles`, the first process to open a group of cases keeps its
inputs (pickled, beside the programs its cold calls kept) and every later process loads
them; elsewhere (one process, `--isolate` children) each process makes its own. The
inputs are then identical in every process by construction, not only by seeding.

Keeping is best effort: inputs that do not pickle, or over `KEEP_LIMIT_BYTES` (a temporary
folder that size, read back whole), are made again by each process.
"""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path

from jitbench.measure import compilation, modes
from jitbench.suite.workload import Inputs

#: The file, in the group's shared folder, that holds its inputs.
INPUTS_FILE = "inputs.pickle"
#: Inputs larger than this are not kept: each process makes its own.
KEEP_LIMIT_BYTES = 1 << 30


def shared_inputs(make: Callable[[], Inputs]) -> Inputs:
    """The group's inputs: loaded where an earlier process of the run kept them, else
    made by `make` and kept for the later ones (within `compilation.sharing_compiles`);
    outside it, `make()`. Raises what `make` raises."""
    folder = compilation.shared_folder()
    if folder is None:
        return make()
    path = folder / INPUTS_FILE
    found = _load(path)
    if found is not None:
        return found
    inputs = make()
    if modes.nbytes_of((inputs.args, inputs.kwargs)) <= KEEP_LIMIT_BYTES:
        _keep(path, inputs)
    return inputs


def _load(path: Path) -> Inputs | None:
    try:
        with path.open("rb") as f:
            found = pickle.load(f)  # the run's own private folder (see sharing_compiles)
    except Exception:  # none yet, or a broken or foreign file: make the inputs
        return None
    # A copy: unpickled arrays are views into the pickle's buffers; copied, each is an
    # array of NumPy's own, allocated as the input function's are.
    return copy.deepcopy(found) if isinstance(found, Inputs) else None


def _keep(path: Path, inputs: Inputs) -> None:
    """Write `inputs` to `path` atomically, or nothing where they do not pickle."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".inputs-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(inputs, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except Exception:  # unpicklable statics, a full disk: each process makes its own
        with contextlib.suppress(OSError):
            os.unlink(tmp)

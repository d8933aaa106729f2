"""The idioms of `tests.idioms` as a suite file: each one a workload of one size, whose
input function returns the call's `Arguments` (JAX-only: no NumPy side, jit checked
against eager and compared with it)."""

import sys
from pathlib import Path

# Run as `jitbench run --suite tests/idioms/suite.py` (and imported again by the worker
# processes): the repository root holds the `tests` package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from jitbench import workload
from tests.idioms import IDIOMS, Idiom


def _inputs(idiom: Idiom):
    def inputs(rng, *, dtype):
        return idiom.arguments()

    return inputs


for _idiom in IDIOMS:
    globals()[_idiom.name] = workload(
        _idiom.fn(), inputs=_inputs(_idiom), sizes={"S": {}}, name=_idiom.name, **_idiom.options
    )

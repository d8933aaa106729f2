"""asv's view of this suite: one benchmark class per jitbench workload, generated, not written.

asv imports this module (`benchmark_dir` is `suites/` in asv.conf.json). It defines no
workload of its own: it discovers the sibling suite files with `jitbench.discover` and
exposes the classes `jitbench.adapters.asv` generates from them as module globals, e.g.
`asv_benchmarks.selu.time_call('M', 'jit')`. `jitbench run` skips this file.
"""

from pathlib import Path as _Path

import jitbench as _jitbench
from jitbench.adapters import asv as _asv_bridge

__jitbench_collect__ = False

_registry = _jitbench.discover([_Path(__file__).parent])
globals().update(_asv_bridge.benchmark_classes(_registry, module=__name__))

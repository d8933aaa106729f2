"""jitbench from Python, notebooks and pytest: `bench(fn, *args)` for one function, the
IPython magics (`%load_ext jitbench`) and the pytest plugin's `jitbench` fixture."""

from jitbench.interactive.one_call import GIVEN, BenchResult, bench

__all__ = ["GIVEN", "BenchResult", "bench"]

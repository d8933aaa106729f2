"""The pytest plugin (entry point `pytest11`: jitbench): a `jitbench` fixture, and the
session's measurements saved as one run and judged by the gate of `jitbench compare`.

    def test_selu(jitbench):
        r = jitbench(selu, x, numpy=selu_np)  # bench(), with test-sized defaults
        assert r.speedup("jit").value > 1

The fixture calls `bench` with a short budget (`--jitbench-budget`, default 0.1 s per
case) in this process (`--jitbench-processes`, default 1), unless the call passes its
own. Each call is one workload of the session's run, named after the test's node id
(`tests/test_a.py::test_f[1]` → `tests.test_a.test_f-1`; a test's second call gets
`--call2`), so the same tests in another order (pytest-randomly, xdist) match; `name=`
names it otherwise. Options:

    --jitbench-save PATH          a path ending in .json: the session's run as that file;
                                  otherwise a folder: PATH/runs/<run id>.json (checked
                                  writable before the tests run)
    --jitbench-compare [RUN|DIR]  judge the session against a stored run (or a folder of
                                  runs, pooled as `jitbench compare` pools it); without a
                                  value, the --jitbench-save file, or its folder's latest run
    --jitbench-fail-on-regression fail the session unless the gate passes, by the rule of
                                  `jitbench compare` (regression, nothing compared, or
                                  inconclusive unless --jitbench-allow-inconclusive)

Under pytest-xdist each worker measures its tests and hands its runs to the controller,
which saves and judges one run (the workers then share the cores: a gate wants `-n 0`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from jitbench.gate import Comparison
    from jitbench.interactive.one_call import BenchResult
    from jitbench.results import Run

#: What the fixture's calls default to: test-sized, in this process.
DEFAULT_BUDGET_S = 0.1
DEFAULT_PROCESSES = 1

_LATEST = "latest"  # --jitbench-compare without a value
_PLUGIN = "jitbench-session"
_WORKER_KEY = "jitbench_runs"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jitbench", "jitbench: NumPy vs JAX eager vs JAX jit")
    group.addoption(
        "--jitbench-save",
        metavar="PATH",
        default=None,
        help="Save the session's jitbench measurements as one run: a PATH ending in .json "
        "is that file; any other PATH is a folder, PATH/runs/<run id>.json.",
    )
    group.addoption(
        "--jitbench-compare",
        metavar="RUN_OR_DIR",
        nargs="?",
        const=_LATEST,
        default=None,
        help="Compare the session's measurements with a stored run or folder of runs "
        "(default: the latest run under --jitbench-save DIR), with jitbench compare's gate. "
        "Give the run as --jitbench-compare=RUN: without '=', a test path after the option "
        "would be taken for the run.",
    )
    group.addoption(
        "--jitbench-fail-on-regression",
        action="store_true",
        default=False,
        help="Fail the session unless --jitbench-compare's gate passes, as `jitbench "
        "compare` exits: a regression, nothing compared, or inconclusive (a partial run "
        "on either side, changes too few samples could test).",
    )
    group.addoption(
        "--jitbench-allow-inconclusive",
        action="store_true",
        default=False,
        help="With --jitbench-fail-on-regression, let an inconclusive gate pass (as "
        "`jitbench compare --allow-inconclusive`).",
    )
    group.addoption(
        "--jitbench-budget",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_BUDGET_S,
        help="Sampling budget per case of the jitbench fixture (default %(default)s).",
    )
    group.addoption(
        "--jitbench-processes",
        metavar="N",
        type=int,
        default=DEFAULT_PROCESSES,
        help="Worker processes per jitbench fixture call (default %(default)s: this one).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(JitbenchSession(config), _PLUGIN)


def _test_name(node_id: str) -> str:
    """A workload name from a test's node id, whatever order the tests run in:
    `tests/test_a.py::T::test_f[1000-x]` → `tests.test_a.T.test_f-1000-x`. Runs of
    other characters become one '-', so '--' (`--call2`) is never part of one."""
    path, _, rest = node_id.partition("::")
    path = path[:-3] if path.endswith(".py") else path
    parts = [*path.split("/"), *(rest.split("::") if rest else ())]
    cleaned = [re.sub(r"[^A-Za-z0-9_.]+", "-", x.replace("]", "")).strip("-.") for x in parts]
    name = ".".join(x for x in cleaned if x)
    return name if name and (name[0].isalpha() or name[0] == "_") else f"test-{name}"


def _is_file(save: str) -> bool:
    """Whether a --jitbench-save path names the run file itself (it ends in .json)."""
    return save.lower().endswith(".json")


def _writable_folder(path: Path) -> str | None:
    """Why a file cannot be created at `path` (its nearest existing folder is not one,
    or not writable), else None. Nothing is created."""
    folder = next((p for p in path.parents if os.path.lexists(p)), Path("."))
    if not folder.is_dir():
        return f"{str(folder)!r} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {str(folder)!r} is not writable"
    return None


class JitbenchSession:
    """The session's measurements: collected, combined, saved and judged."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[tuple[str, BenchResult]] = []
        self.runs: list[Run] = []  # in the controller: every worker's (pytest-xdist)
        self.names: dict[str, str] = {}  # workload name → the node id that took it
        self.calls: dict[str, int] = {}  # node id → its fixture calls so far
        self.saved: Path | None = None
        self.save_note: str | None = None  # the run went elsewhere, or nowhere
        self.comparison: Comparison | None = None
        self.baseline: Run | None = None
        self.baseline_note: str | None = None
        self.failed_gate = False
        self.worker = hasattr(config, "workerinput")
        save = config.getoption("--jitbench-save")
        self.save_file = Path(save) if save and _is_file(save) else None
        self.save_dir = Path(save) if save and not _is_file(save) else None
        self.compare_to = config.getoption("--jitbench-compare")
        self.fail_on_regression = bool(config.getoption("--jitbench-fail-on-regression"))
        self.allow_inconclusive = bool(config.getoption("--jitbench-allow-inconclusive"))
        if self.fail_on_regression and self.compare_to is None:
            raise pytest.UsageError(
                "--jitbench-fail-on-regression needs --jitbench-compare RUN (or a folder)"
            )
        if not self.worker:
            self._check_save()
        if self.compare_to is not None and not self.worker:
            self._load_baseline()

    def _check_save(self) -> None:
        """Before any test runs: the --jitbench-save file or folder can be written (as
        --jitbench-compare's run is read now), so a session's measurements are not
        measured only to be lost."""
        from jitbench.errors import JitbenchError
        from jitbench.results import OutputLayout, check_replaceable

        why = None
        try:
            if self.save_file is not None:
                check_replaceable(self.save_file)
                why = _writable_folder(self.save_file)
            elif self.save_dir is not None:
                if os.path.lexists(self.save_dir) and not self.save_dir.is_dir():
                    why = (
                        "it is not a folder (a path ending in .json names the run file; "
                        "any other, a folder)"
                    )
                else:
                    why = _writable_folder(OutputLayout(self.save_dir).runs_dir / "x.json")
                    if why is None:
                        OutputLayout(self.save_dir).check_runs_folder()
        except JitbenchError as exc:
            why = str(exc)
        except OSError as exc:
            why = exc.strerror or str(exc)
        if why is not None:
            target = self.save_file or self.save_dir
            raise pytest.UsageError(f"--jitbench-save {target}: cannot be written: {why}")

    def _load_baseline(self) -> None:
        """The run to compare with, read before any test runs: a bad path is a usage error
        now, and the session's own run (saved at the end) is never its own baseline."""
        from jitbench.errors import JitbenchError
        from jitbench.gate import load_side
        from jitbench.results import OutputLayout

        target: Path
        if self.compare_to == _LATEST and self.save_file is not None:
            if not os.path.lexists(self.save_file):
                self.baseline_note = (
                    f"no run at {self.save_file} to compare with yet: this session's run "
                    "becomes the first"
                )
                return
            target = self.save_file
        elif self.compare_to == _LATEST:
            if self.save_dir is None:
                raise pytest.UsageError(
                    "--jitbench-compare without a run compares with the latest run under "
                    "--jitbench-save DIR: pass one of the two"
                )
            stored = sorted(OutputLayout(self.save_dir).runs_dir.glob("*.json"))
            if not stored:
                self.baseline_note = (
                    f"no run under {self.save_dir} to compare with yet: this session's run "
                    "becomes the first"
                )
                return
            target = stored[-1]  # run ids begin with their UTC start time
        else:
            target = Path(self.compare_to)
        try:
            self.baseline = load_side(target)
        except JitbenchError as exc:
            raise pytest.UsageError(f"--jitbench-compare {target}: {exc}") from None

    def measure(self, node: pytest.Item, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from jitbench.interactive.one_call import bench

        kwargs.setdefault("budget", self.config.getoption("--jitbench-budget"))
        kwargs.setdefault("processes", self.config.getoption("--jitbench-processes"))
        from jitbench.errors import ConfigError

        given = kwargs.pop("name", None)
        call = self.calls[node.nodeid] = self.calls.get(node.nodeid, 0) + 1
        name = given or _test_name(self._node_key(node))
        if call > 1:  # one workload per call: the test's own count, not the session's order
            name = f"{name}--call{call}"
        taker = self.names.setdefault(name, node.nodeid)
        if taker != node.nodeid:
            raise ConfigError(
                f"name={name!r} is already the workload of {taker}; give each test's "
                "calls their own name= (or none: the node id names them)."
            )
        result = bench(fn, *args, name=name, **kwargs)
        self.results.append((node.nodeid, result))
        self.runs.append(result.run)
        return result

    def _node_key(self, node: pytest.Item) -> str:
        """`node`'s id with its file relative to the config file's folder (else to where
        pytest was started), not to the rootdir, which a path given as an option's value
        (--jitbench-save ../bench) moves when there is no config file."""
        path, sep, rest = node.nodeid.partition("::")
        cfg = self.config
        anchor = cfg.inipath.parent if cfg.inipath is not None else cfg.invocation_params.dir
        with contextlib.suppress(ValueError):  # a file outside it: its id as pytest has it
            path = Path(node.path).relative_to(anchor).as_posix()
        return f"{path}{sep}{rest}"

    # -- pytest-xdist: the workers' runs reach the controller ---------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from jitbench.results import run_from_dict

        for text in getattr(node, "workeroutput", {}).get(_WORKER_KEY, []):
            run = run_from_dict(json.loads(text), source="a pytest-xdist worker's runs")
            self.runs.append(run)

    # -- the end of the session -----------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker:
            from jitbench.results import dump_run

            self.config.workeroutput[_WORKER_KEY] = [dump_run(r) for r in self.runs]  # type: ignore[attr-defined]
            return
        if not self.runs:
            return
        run = session_run(self.runs)
        if self.save_file is not None or self.save_dir is not None:
            self._save(run)
        if self.baseline is not None:
            from jitbench.gate import GateOutcome, Thresholds, are_partners, compare
            from jitbench.gate import compare_interleaved as paired

            # The judge `jitbench compare` of the same two runs uses, and its outcome.
            judge = paired if are_partners(self.baseline, run) else compare
            self.comparison = judge(self.baseline, run, thresholds=Thresholds())
            outcome = self.comparison.outcome(allow_inconclusive=self.allow_inconclusive)
            if self.fail_on_regression and outcome is not GateOutcome.PASS:
                self.failed_gate = True
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _save(self, run: Run) -> None:
        """Write the session's run where --jitbench-save asks; where that fails after all
        (the folder went away, a full disk), to a temporary file, and say where."""
        from jitbench.errors import JitbenchError
        from jitbench.results import OutputLayout, save_run

        if self.save_file is not None:
            target = self.save_file
        else:
            assert self.save_dir is not None
            target = OutputLayout(self.save_dir).run_json(run.run_id)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self.saved = save_run(run, target)
            return
        except (OSError, JitbenchError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        try:
            fd, name = tempfile.mkstemp(prefix=f"jitbench-{run.run_id}-", suffix=".json")
            os.close(fd)
            self.saved = save_run(run, name)
            self.save_note = (
                f"could not write {target} ({why}); the session's run is saved to "
                f"{self.saved} instead"
            )
        except (OSError, JitbenchError) as exc:
            self.save_note = f"could not write {target} ({why}) nor a temporary file ({exc})"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker or not (self.runs or self.baseline_note):
            return
        tr = terminalreporter
        tr.write_sep("-", "jitbench")
        from jitbench.render.bench_summary import summary_line

        for _, result in self.results:
            tr.write_line(summary_line(result))
        if len(self.runs) > len(self.results):
            tr.write_line(f"{len(self.runs) - len(self.results)} measured in worker processes")
        if self.save_note is not None:
            tr.write_line(f"warning: {self.save_note}", yellow=True)
        elif self.saved is not None:
            tr.write_line(f"run saved to {self.saved}")
        if self.baseline_note is not None:
            tr.write_line(self.baseline_note)
        cmp = self.comparison
        if cmp is None:
            return
        from rich.console import Console

        from jitbench.render.comparison import comparison_report

        width = max(self.config.get_terminal_writer().fullwidth, 60)
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, color_system=None, soft_wrap=False)
        console.print(comparison_report(cmp, all_rows=False, width=width, wide=False))
        for line in buffer.getvalue().rstrip().splitlines():
            tr.write_line(line.rstrip())
        if cmp.nothing_compared is not None:
            tr.write_line(f"warning: {cmp.nothing_compared}", yellow=True)
        for line in [*cmp.inconclusive, *cmp.warnings]:  # as `jitbench compare` warns
            tr.write_line(f"warning: {line}", yellow=True)
        if self.failed_gate:
            from jitbench.gate import GateOutcome

            outcome = cmp.outcome(allow_inconclusive=self.allow_inconclusive)
            why = {
                GateOutcome.NOTHING_COMPARED: "the gate compared nothing, so it checked nothing",
                GateOutcome.INCONCLUSIVE: "the gate is inconclusive, so it does not pass "
                "(--jitbench-allow-inconclusive accepts it)",
            }.get(outcome, "regressed: " + ", ".join(cmp.regressed_workloads))
            tr.write_line(
                f"jitbench: the session fails (--jitbench-fail-on-regression): {why}",
                red=True,
                bold=True,
            )


def session_run(runs: list[Run]) -> Run:
    """The session's runs (one per fixture call) as one run: every measurement, every
    workload's selection, the first run's settings and environment (with the last one's
    machine snapshot after), a new id."""
    from jitbench.results.model import new_run_id

    runs = _distinct_names(runs)
    first, last = runs[0], runs[-1]
    if len(runs) == 1:
        return first
    selection = tuple(s for r in runs for s in (r.config.selection or ()))
    environment = dict(first.environment)
    if "machine_after" in last.environment:
        environment["machine_after"] = last.environment["machine_after"]
    return replace(
        first,
        run_id=new_run_id(),
        finished_at=last.finished_at,
        complete=all(r.complete for r in runs),
        environment=environment,
        config=replace(first.config, selection=selection or None),
        measurements=tuple(m for r in runs for m in r.measurements),
    )


def _distinct_names(runs: list[Run]) -> list[Run]:
    """`runs` with a workload name another run already took suffixed (`-2`, …): pytest-xdist
    workers name their tests' workloads apart from each other."""
    taken: set[str] = set()
    out = []
    for run in runs:
        renames: dict[str, str] = {}
        for name in dict.fromkeys(m.case.workload for m in run.measurements):
            unique, n = name, 1
            while unique in taken:
                n += 1
                unique = f"{name}-{n}"
            taken.add(unique)
            if unique != name:
                renames[name] = unique
        if renames:
            run = replace(
                run,
                measurements=tuple(
                    replace(m, case=replace(m.case, workload=renames[m.case.workload]))
                    if m.case.workload in renames
                    else m
                    for m in run.measurements
                ),
                config=replace(
                    run.config,
                    selection=tuple(
                        replace(s, workload=renames.get(s.workload, s.workload))
                        for s in run.config.selection or ()
                    )
                    or None,
                ),
            )
        out.append(run)
    return out


@pytest.fixture
def jitbench(request: pytest.FixtureRequest) -> Callable[..., BenchResult]:
    """`jitbench(fn, *args, numpy=..., **options)`: `jitbench.bench` inside a test, with a
    test-sized budget and one process by default; the result is also saved and judged
    with the session's run (`--jitbench-save`, `--jitbench-compare`)."""
    session = request.config.pluginmanager.get_plugin(_PLUGIN)
    assert isinstance(session, JitbenchSession)
    node = request.node

    def measure(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> BenchResult:
        return session.measure(node, fn, *args, **kwargs)  # type: ignore[no-any-return]

    return measure

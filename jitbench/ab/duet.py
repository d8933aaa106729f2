"""Interleaved A/B measurement of two sides (two revisions, or two Python environments) in
the same time window: `jitbench ab`.

Two runs measured minutes apart differ on a shared machine by more than the changes a gate
looks for (docs: validation, "Figures behind the code"), so a gate that compares
them either misses real regressions or cries wolf. Here both sides are measured at once:
each side is a worker process (`runner.worker`, ordered to `ab.serve`) that stays alive
for the whole comparison, both pinned to the same core; for every case the parent opens
the case on both, gives both sides the same calls per sample, and then takes rounds of
samples, one sample of each mode on each side per round (one side's modes, then the
other's), the sides in a fresh random order each time (randomised
multiple interleaved trials, Abedi & Brecht 2017). The machine's drift hits both sides of a
round alike and cancels in the per-round ratio. Cold jit compiles are repeated the same
way. With `pairs` > 1, that many worker pairs measure every case in turn, so what differs
from one process to the next shows up in the result too.

The result is two ordinary runs (base and new) whose sample i of a case and mode comes from
the same round on both sides, and whose compiles are paired likewise; `gate.paired` judges
them. A plan that judges no time (`DuetPlan.concurrent`: `ab --metrics-only`)
opens each case on both sides at once, each worker on a core of its own.

Each side's workers send their programs' texts (`CompileInfo.program_text`) beside the
measurements, so the saved runs keep them for a program diff. Nothing here prints;
progress goes to `on_event`, and both runs are handed to `checkpoint` after every case so
that an interrupted comparison keeps what it measured.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jitbench.ab.serve import serve
from jitbench.config import RunConfig
from jitbench.errors import ConfigError, JitbenchError
from jitbench.results import Measurement, Mode, Run
from jitbench.results.codec import measurement_from_dict
from jitbench.results.merge import pool_case
from jitbench.results.model import RecordedConfig, new_run_id, utc_now
from jitbench.runner.worker import Command, start_worker

#: Seconds a worker may take to start, import JAX and its suites, and warm up.
START_LIMIT_S = 300.0
#: Seconds one request may take once started (a sample, a compile, opening a case).
REQUEST_LIMIT_S = 600.0


class DuetError(JitbenchError):
    """A side's worker could not start or died; the cases measured before are kept."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: the Python that runs it, what goes first on its path
    (the harness, then the side's tree), its suite paths and a label for reports."""

    name: str  # "base" or "new"
    label: str
    python: str
    path: tuple[str, ...]
    suites: tuple[str, ...]
    cwd: str


@dataclass(frozen=True)
class DuetPlan:
    """How much to measure per case.

    Attributes:
        budget_s: sampling seconds per case and worker pair (both sides together) after
            `min_rounds`.
        min_rounds: rounds every case gets, budget or not (each a paired sample per mode).
        max_rounds: rounds a case stops at, budget or not.
        compiles: cold jit compiles per side and worker pair (the first is the case's own).
        pairs: worker pairs, each measuring every case in turn.
        seed: for the sides' random order in each round.
        concurrent: open each case on both sides at once, each side's worker on a core of
            its own where two are allowed (`ab --metrics-only`: the programs
            are compared, no time is judged, so the sides need not share a core or take
            turns).
    """

    budget_s: float = 0.7
    min_rounds: int = 20
    max_rounds: int = 200
    compiles: int = 5
    # Three, each with 0.7 s a case (about the cost of two with 1 s): a worker pair can
    # carry a per-process offset on identical code, so the pair is the unit of evidence,
    # and two units agree by chance too often (docs: methodology, "The gate's statistics").
    pairs: int = 3
    seed: int = 0
    concurrent: bool = False


@dataclass(frozen=True)
class DuetCase:
    """A workload × size to compare (either side may lack it)."""

    workload: str
    size: str
    on: tuple[str, ...]  # the sides that have it: ("base", "new") or one of them


@dataclass(frozen=True)
class DuetStarted:
    """Both sides started; `run_ids` (base, new) are the runs the checkpoints save."""

    cases: int
    pairs: int
    run_ids: tuple[str, str] = ("", "")


@dataclass(frozen=True)
class DuetCaseStarted:
    index: int
    total: int
    label: str


DuetEvent = DuetStarted | DuetCaseStarted


class _Worker:
    """A side's worker (`runner.worker`, ordered to `serve`) and its requests."""

    def __init__(self, side: Side, *, env: dict[str, str]) -> None:
        self.side = side
        self.info: dict[str, Any] = {}  # the answer to "init"
        # Closed in `wait_closed`: it lives as long as the worker.
        self.log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115
        # `python -m` puts the working folder first on the path: start in the harness (so
        # a tree's own jitbench cannot shadow it); the worker then moves to the tree.
        cwd = side.path[0] if side.path else side.cwd
        command = Command(side.python, env=env, cwd=cwd, log=self.log)
        self.worker = start_worker(command).order(serve)

    def send(self, op: str, **fields: Any) -> None:
        """Resume the worker and send one request; `receive` takes its answer."""
        self._signal(signal.SIGCONT)
        if not self.worker.channel.send(op, fields):
            raise self._died(op)

    def receive(self, op: str, limit_s: float = REQUEST_LIMIT_S) -> dict[str, Any]:
        """The answer to the request `send` sent; the worker is stopped again after it."""
        try:
            try:
                message = self.worker.channel.receive({"answer", "error"}, limit_s=limit_s)
            except EOFError:
                raise self._died(op) from None
            if message is not None and message[0] == "error":  # `Channel`: unreadable
                self.kill()
                raise DuetError(f"{self.side.name} side ({self.side.label}): {message[1]}")
            if message is None:
                self.kill()
                raise DuetError(
                    f"the {self.side.name} side's worker did not answer {op!r} within "
                    f"{limit_s:.0f} s; it was stopped.{self._stderr_tail()}"
                )
            answer: dict[str, Any] = message[1]
            if not answer.get("ok"):
                raise DuetError(f"{self.side.name} side ({self.side.label}): {answer.get('error')}")
            return answer
        finally:
            self._signal(signal.SIGSTOP)

    def request(self, op: str, limit_s: float = REQUEST_LIMIT_S, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its answer. The worker is stopped (SIGSTOP)
        between requests: an idle XLA thread pool keeps spinning for a while after its
        work, and on the shared core it would take the other side's time (docs:
        methodology, "The gate's statistics")."""
        try:
            self.send(op, **fields)
        except DuetError:
            self._signal(signal.SIGSTOP)
            raise
        return self.receive(op, limit_s)

    def _signal(self, sig: int) -> None:
        if self.worker.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.worker.pid, sig)

    def _died(self, op: str) -> DuetError:
        self.worker.stop()
        return DuetError(
            f"the {self.side.name} side's worker ({self.side.label}) died during {op!r} "
            f"(exit code {self.worker.exitcode}).{self._stderr_tail()}"
        )

    def _stderr_tail(self) -> str:
        try:
            self.log.seek(0)
            text = self.log.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return (" Its last output: " + " | ".join(lines[-3:])) if lines else ""

    def close(self) -> None:
        self.ask_to_quit()
        self.wait_closed()

    def ask_to_quit(self) -> None:
        """Send "quit" (`wait_closed` waits for it): several workers shut down together."""
        self._signal(signal.SIGCONT)
        if not self.worker.channel.send("quit"):
            self.kill()

    def wait_closed(self) -> None:
        self.worker.end(10)
        self.log.close()

    def kill(self) -> None:
        self._signal(signal.SIGCONT)
        self.worker.stop()


def _close_all(workers: Sequence[_Worker]) -> None:
    """Close every worker, their shutdowns (JAX's, about a second) overlapping."""
    for w in workers:
        w.ask_to_quit()
    for w in workers:
        w.wait_closed()


def _kill_all(workers: Sequence[_Worker]) -> None:
    """Kill every worker at once (a stop or a failure: nothing more is asked of them)."""
    for w in workers:
        w.kill()
        with contextlib.suppress(OSError, ValueError):
            w.log.close()


#: glibc malloc settings both sides' workers get (unless the caller's environment sets
#: them). By default glibc moves its mmap threshold as a process frees memory, so whether
#: a 1 MB NumPy temporary costs fresh pages (an mmap, page faults, a munmap) or comes
#: from the heap depends on what the process allocated before: on its history, which
#: differs between two revisions' processes even where the measured code does not. A
#: fixed threshold (the largest glibc accepts) and no trimming put every worker in the
#: steady state of a long-lived process, whatever ran before. (`gelu` NumPy, identical
#: code, came out 5-10 % faster on the side whose suites differed elsewhere, in both
#: worker pairs, before these settings.) Other C libraries ignore the variables.
FIXED_ALLOCATOR = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(1024**3),
}


def side_environment(side: Side, base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a side's worker runs with: its path first on PYTHONPATH, and the
    allocator settings of `FIXED_ALLOCATOR` where the environment has none of its own."""
    env = dict(os.environ if base_env is None else base_env)
    extra = [p for p in side.path if p]
    if env.get("PYTHONPATH"):
        extra.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(extra)
    env["PYTHONUNBUFFERED"] = "1"
    for name, value in FIXED_ALLOCATOR.items():
        env.setdefault(name, value)
    return env


#: The largest random heap offset a worker starts with (see `layout_offsets`).
MAX_LAYOUT_OFFSET = 4 * 1024 * 1024


def layout_offsets(rng: random.Random, count: int) -> list[int]:
    """A random heap offset (bytes, a multiple of 16) for each of `count` workers.

    Where a process's large buffers land relative to pages and cache sets follows from
    everything it allocated before them, and that history is the same in every worker of
    one side (the same paths, imports and cases in the same order) but differs between the
    sides even for identical code. A layout that happens to suit one side then makes all of
    its workers alike faster, which no number of worker pairs can tell from a code change
    (Mytkowicz et al. 2009; Curtsinger & Berger's Stabilizer, 2013). Each worker therefore
    holds a block of random size from its start, so every later allocation on the heap
    lands at a random offset: the layout's effect becomes noise between worker pairs,
    which the pair-level test accounts for, instead of a bias of one side.
    """
    return [rng.randrange(0, MAX_LAYOUT_OFFSET, 16) for _ in range(count)]


def _start(
    sides: Sequence[Side],
    config: RunConfig,
    cores: Sequence[Sequence[int]],
    offsets: Sequence[int],
) -> list[_Worker]:
    """Start one worker per side (in parallel: JAX's import dominates) and init them, each
    with its heap offset from `offsets` and its cores from `cores` (one list a side)."""
    workers: list[_Worker] = []
    try:
        workers.extend(_Worker(side, env=side_environment(side)) for side in sides)
        for w, offset, its_cores in zip(workers, offsets, cores, strict=True):
            w.worker.channel.send(
                "init",
                {
                    "config": config.to_dict(),
                    "suites": list(w.side.suites),
                    "cwd": w.side.cwd,
                    "cores": list(its_cores),
                    "layout_offset": offset,
                },
            )  # False where it died at once; `_read_init` says why
        infos = [_read_init(w) for w in workers]
    except BaseException:
        _kill_all(workers)
        raise
    for w, info in zip(workers, infos, strict=True):
        w.info = info
        w._signal(signal.SIGSTOP)  # resumed for each request (see `_Worker.request`)
    return workers


def _read_init(w: _Worker) -> dict[str, Any]:
    try:
        message = w.worker.channel.receive({"answer"}, limit_s=START_LIMIT_S)
    except EOFError:
        message = None
    if message is None:
        w.kill()
        raise DuetError(
            f"the {w.side.name} side's worker ({w.side.label}) did not start "
            f"(exit code {w.worker.exitcode}); check that its Python has jitbench's "
            f"dependencies (jax, numpy, scipy, threadpoolctl).{w._stderr_tail()}"
        )
    answer: dict[str, Any] = message[1]
    if not answer.get("ok"):
        w.kill()
        raise DuetError(f"{w.side.name} side ({w.side.label}): {answer.get('error')}")
    return answer


def plan_duet_cases(
    workloads: Mapping[str, Mapping[str, Mapping[str, Any]]],
    sizes: Sequence[str],
    select_workload: Callable[[str, Sequence[str]], bool],
) -> list[DuetCase]:
    """The workload × size cases to compare, new side's order first, then base-only ones.

    `workloads` maps side name → workload name → {"sizes": [...], "tags": [...]} as the
    workers report; `select_workload(name, tags)` keeps a workload.
    """
    seen: dict[tuple[str, str], list[str]] = {}
    for side in ("new", "base"):
        for name, info in workloads.get(side, {}).items():
            if not select_workload(name, info.get("tags", ())):
                continue
            for size in sizes:
                if size in info.get("sizes", ()):
                    seen.setdefault((name, size), []).append(side)
    return [DuetCase(name, size, tuple(sorted(on))) for (name, size), on in seen.items()]


def _measure_case(
    case: DuetCase,
    workers: Mapping[str, _Worker],
    config: RunConfig,
    plan: DuetPlan,
    rng: random.Random,
    case_id: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[Measurement]]:
    """Open `case` on the sides that have it, sample them in interleaved rounds, repeat
    the cold compiles, and return each side's measurements."""
    dtype = "float64" if config.x64 else "float32"
    sides = [s for s in ("base", "new") if s in case.on]
    calls: dict[str, dict[str, int]] = {}
    opening: dict[str, Any] = {
        "id": case_id,
        "workload": case.workload,
        "size": case.size,
        "dtype": dtype,
    }
    if plan.concurrent:  # both sides open (compile) at once; their answers read in turn
        for s in sides:
            workers[s].send("open", **opening)
        answers = {s: workers[s].receive("open") for s in sides}
    else:
        answers = {s: workers[s].request("open", **opening) for s in rng.sample(sides, len(sides))}
    for s, answer in answers.items():
        calls[s] = {m: int(c) for m, c in answer["calls"].items()}
    modes = [m.value for m in config.modes]
    # The same calls per sample on both sides, so a round's two samples are alike.
    common = {m: max((calls[s].get(m, 0) for s in sides), default=0) for m in modes}
    live = {(s, m) for s in sides for m in modes if calls[s].get(m, 0) > 0}
    started = clock()
    rounds = 0
    while live and rounds < plan.max_rounds:
        if rounds >= plan.min_rounds and clock() - started >= plan.budget_s:
            break
        # A round: each side samples every mode it still runs, the sides in random order.
        for s in rng.sample(sides, len(sides)):
            wanted = {m: common[m] for m in modes if (s, m) in live}
            if not wanted:
                continue
            answer = workers[s].request("round", id=case_id, calls=wanted)
            for m, seconds in answer["s"].items():
                if seconds is None:
                    live.discard((s, m))
        rounds += 1
    if Mode.JIT in config.modes:
        for _ in range(max(0, plan.compiles - 1)):
            for s in rng.sample(sides, len(sides)):
                if (s, Mode.JIT.value) in live:
                    workers[s].request("compile", id=case_id)
    out: dict[str, list[Measurement]] = {}
    for s in sides:
        answer = workers[s].request("finish", id=case_id)
        texts = answer.get("programs") or {}
        out[s] = [
            _with_program(measurement_from_dict(d), texts.get(d.get("mode")))
            for d in answer["measurements"]
        ]
    return out


def _with_program(m: Measurement, text: object) -> Measurement:
    """`m` holding its program's text as the worker sent it (stored beside the run)."""
    if m.compile is None or not isinstance(text, str):
        return m
    return replace(m, compile=replace(m.compile, program_text=text))


def _pool(parts: Sequence[Sequence[Measurement]]) -> list[Measurement]:
    """One worker pair's measurements of a case, or several pairs' pooled (in pair order,
    each pair's samples and compiles a part of their own: `merge.pool_case`); a mode any
    pair did not measure ok is that pair's measurement."""
    if len(parts) == 1:
        return list(parts[0])
    not_ok: dict[Mode, Measurement] = {}
    for part in parts:
        for m in part:
            if not m.ok:
                not_ok.setdefault(m.mode, m)
    return [not_ok.get(m.mode, m) for m in pool_case(parts)]


@dataclass(frozen=True)
class DuetResult:
    """Both sides' runs; `complete` is False when the comparison was cut short."""

    base: Run
    new: Run
    cases: int
    suite_errors: tuple[str, ...] = ()  # "side: file:line: error", from either side


def run_duet(
    base: Side,
    new: Side,
    config: RunConfig,
    *,
    plan: DuetPlan | None = None,
    select_workload: Callable[[str, Sequence[str]], bool] = lambda _name, _tags: True,
    cores: Sequence[int] = (),
    on_event: Callable[[DuetEvent], None] | None = None,
    checkpoint: Callable[[Run, Run], None] | None = None,
) -> DuetResult:
    """Measure `base` and `new` interleaved, case by case (see the module's docstring).

    Args:
        config: the sampling settings both sides run with (sizes, modes, threads, x64,
            devices); its budget is replaced by the plan's rounds.
        cores: the cores both workers are pinned to (default: the first allowed core; with
            `plan.concurrent`, the first two allowed, one a side).

    Raises:
        DuetError: a worker could not start or died (after `checkpoint` saw what was
            measured before).
    """
    plan = plan or DuetPlan()
    emit = on_event or (lambda _e: None)
    save = checkpoint or (lambda _b, _n: None)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if cores:
        side_cores: list[Sequence[int]] = [cores, cores]
    elif plan.concurrent and len(allowed) >= 2:
        side_cores = [allowed[:1], allowed[1:2]]
    else:
        side_cores = [allowed[:1], allowed[:1]]
    rng = random.Random(plan.seed)
    started_at = utc_now()
    ids = {"base": new_run_id(), "new": new_run_id()}
    pairs: list[list[_Worker]] = []
    try:
        for _ in range(plan.pairs):
            pairs.append(_start((base, new), config, side_cores, layout_offsets(rng, 2)))
    except BaseException:  # a signal, or a pair that did not start: the others end too
        _kill_all([w for workers in pairs for w in workers])
        raise
    infos = {w.side.name: w.info for w in pairs[0]}
    if config.x64 is None:  # as each side's suites declare it (both must agree)
        widths = {bool(info.get("x64")) for info in infos.values()}
        if len(widths) > 1:
            for workers in pairs:
                for w in workers:
                    w.close()
            raise ConfigError(
                "the two sides' suites declare different float widths (one float64, one "
                "not), so their figures would not compare; pass --x64 or --no-x64."
            )
        config = replace(config, x64=widths.pop())
    cases = plan_duet_cases(
        {name: info["workloads"] for name, info in infos.items()}, config.sizes, select_workload
    )
    suite_errors = tuple(
        f"{name}: {err}" for name, info in infos.items() for err in info.get("suite_errors", ())
    )
    if not cases:
        _close_all([w for workers in pairs for w in workers])
        raise ConfigError(
            "no workload of either side matches the selection at sizes "
            f"{', '.join(config.sizes)}"
            + (f" ({'; '.join(suite_errors)})" if suite_errors else "")
            + "; check -k, --sizes and --suite."
        )
    emit(DuetStarted(cases=len(cases), pairs=plan.pairs, run_ids=(ids["base"], ids["new"])))
    measured: dict[str, list[Measurement]] = {"base": [], "new": []}

    def runs(complete: bool) -> tuple[Run, Run]:
        out = []
        for side in (base, new):
            other = new if side is base else base
            record = RecordedConfig(
                settings=config,
                extra={
                    "interleaved": {
                        "side": side.name,
                        "label": side.label,
                        "partner_run_id": ids[other.name],
                        "partner_label": other.label,
                        "pairs": plan.pairs,
                        "budget_s": plan.budget_s,
                        "min_rounds": plan.min_rounds,
                        "compiles": plan.compiles,
                        "layout_offsets": [
                            w.info.get("layout_offset", 0)
                            for workers in pairs
                            for w in workers
                            if w.side.name == side.name
                        ],
                    }
                },
            )
            out.append(
                Run(
                    run_id=ids[side.name],
                    started_at=started_at,
                    finished_at=utc_now(),
                    complete=complete,
                    environment=infos[side.name]["environment"],
                    config=record,
                    measurements=tuple(measured[side.name]),
                )
            )
        return out[0], out[1]

    finished = False
    try:
        for index, case in enumerate(cases, 1):
            emit(DuetCaseStarted(index, len(cases), f"{case.workload}[{case.size}]"))
            parts: dict[str, list[list[Measurement]]] = {"base": [], "new": []}
            for workers in pairs:
                by_side = {w.side.name: w for w in workers}
                got = _measure_case(case, by_side, config, plan, rng, index)
                for side_name, ms in got.items():
                    parts[side_name].append(ms)
            for side_name, side_parts in parts.items():
                if side_parts:
                    measured[side_name].extend(_pool(side_parts))
            save(*runs(complete=False))
        finished = True
    except BaseException:
        save(*runs(complete=False))
        raise
    finally:
        everyone = [w for workers in pairs for w in workers]
        if finished:
            _close_all(everyone)
        else:  # a stop signal or a failure: no worker is left to finish its request
            _kill_all(everyone)
    base_run, new_run = runs(complete=True)
    save(base_run, new_run)
    return DuetResult(base=base_run, new=new_run, cases=len(cases), suite_errors=suite_errors)


def harness_path(into: Path) -> Path:
    """Copy the running jitbench package into `into` and return the folder to put first on
    a side's path, so both sides measure with this harness, whatever jitbench their own
    tree or environment has (the code under test is theirs, the stopwatch is ours)."""
    import shutil

    source = Path(__file__).resolve().parents[1]  # the jitbench package this module is in
    target = into / "jitbench"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return into

"""What the index and the history page need of one run, small, and cached beside the runs.

An index refresh lists every run in `runs/` and draws each workload across them. Loading
every run for that made a refresh cost as much as its biggest stored file (seconds for a
50 MB run, on every `jitbench run`). A `RunSummary` holds the few numbers those pages
show: names, dates, machine, geometric means, each preset case's speedups and times with
their intervals. It is kept in `runs/.index-cache/<run file name>` under the run file's
stamp (size, mtime in ns, inode; see `results.validated.stamp_of`) and the code that
computed it, so any write to the run file or change of that code makes it stale. The
cache is a hint: an entry that is stale, unreadable or malformed is rebuilt from the run,
and one that cannot be written is skipped.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.config import ALL_MODES, JAX_MODES, Mode
from jitbench.errors import OutputError, ResultsFormatError
from jitbench.measure import threads
from jitbench.report import data
from jitbench.results import OutputLayout, Run, load_run, model, write_text_atomic
from jitbench.results.analysis import analyse, estimates, figures, judgement, machine
from jitbench.results.safe_io import lstat_or_none, read_regular
from jitbench.results.validated import Stamp, stamp_of
from jitbench.suite import workload

#: The folder in `runs/` that holds one summary per run file (a dot folder: readers glob
#: runs/*.json for runs, and it is no run).
CACHE_FOLDER = OutputLayout(Path()).index_cache.name

CaseKey = tuple[str, str, str, str]
#: (value, low, high) of a speedup or a time per call with its 95 % interval as measured
#: (either end None where there is none); only values a log axis can draw are kept.
Interval = tuple[float, float | None, float | None]


@dataclass(frozen=True, kw_only=True)
class ProgramMetrics:
    """A jit or sharded mode's compiled program as the history draws it over runs: its
    fingerprint, instructions by opcode, XLA's flops and bytes accessed, temp and peak
    memory, and compiles during timing (schema 1.8 on; None where not recorded)."""

    fingerprint: str
    opcodes: dict[str, int] = field(default_factory=dict)
    flops: float | None = None
    bytes_accessed: float | None = None
    temp_bytes: int | None = None
    peak_bytes: int | None = None
    recompiles: int = 0

    @classmethod
    def of(cls, info: model.CompileInfo) -> ProgramMetrics | None:
        """The metrics of one compile, or None before programs were fingerprinted."""
        if not info.program_fingerprint:
            return None
        memory = info.memory or {}
        return cls(
            fingerprint=info.program_fingerprint,
            opcodes=dict(info.hlo_opcodes or {}),
            flops=info.flops,
            bytes_accessed=info.bytes_accessed,
            temp_bytes=memory.get("temp_bytes"),
            peak_bytes=memory.get("peak_bytes"),
            recompiles=info.timed_compile_count,
        )

    def compile_info(self) -> model.CompileInfo:
        """The compile figures back, for `gate.program`'s account of what moved."""
        memory = {"temp_bytes": self.temp_bytes, "peak_bytes": self.peak_bytes}
        return model.CompileInfo(
            program_fingerprint=self.fingerprint,
            hlo_opcodes=self.opcodes,
            flops=self.flops,
            bytes_accessed=self.bytes_accessed,
            memory={k: v for k, v in memory.items() if v is not None},
            timed_compile_count=self.recompiles,
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ProgramMetrics:
        opcodes = raw["opcodes"]
        if not all(isinstance(k, str) and type(v) is int for k, v in opcodes.items()):
            raise ValueError("bad opcode counts")
        return cls(
            fingerprint=str(raw["fingerprint"]),
            opcodes=dict(opcodes),
            flops=_number(raw["flops"]),
            bytes_accessed=_number(raw["bytes_accessed"]),
            temp_bytes=None if raw["temp_bytes"] is None else int(raw["temp_bytes"]),
            peak_bytes=None if raw["peak_bytes"] is None else int(raw["peak_bytes"]),
            recompiles=int(raw["recompiles"]),
        )


#: The modes whose compiled program the history draws (eager has one per primitive).
PROGRAM_MODES = (Mode.JIT, Mode.SHARDED)


@dataclass(frozen=True, kw_only=True)
class CaseFigures:
    """One preset case's figures: speedup over NumPy per JAX mode and median time per call
    per mode (ok measurements only), each with its 95 % interval."""

    speedups: dict[str, Interval] = field(default_factory=dict)
    times: dict[str, Interval] = field(default_factory=dict)
    #: each JAX mode's compiled-program fingerprint (modulo names; schema 1.8 on)
    programs: dict[str, str] = field(default_factory=dict)
    #: jit's and sharded's compiled-program metrics (`ProgramMetrics`; schema 1.8 on)
    compiled: dict[str, ProgramMetrics] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """What the index and history pages show of one run. Text is not escaped."""

    run_id: str
    started_at: str
    complete: bool
    name: str
    label: str | None
    commit: str | None
    started_text: str
    machine: str
    host: str
    #: the settings shown as tags in the index ('quick', 'sweep', 'x64'), then what the
    #: machine was ('busy', 'noisy', 'unstable': `machine.run_flags`)
    flags: list[str]
    #: device label → its title ('cpu:0 (cpu)'), in the run's order
    devices: dict[str, str]
    jax: str
    workloads: list[str]
    #: device label → [(mode, geometric-mean speedup or None)]
    geomeans: dict[str, list[tuple[str, float | None]]]
    #: what of the machine and software changes figures (history marks changes)
    fingerprint: dict[str, str]
    #: the run's preset cases in its own order, with their figures
    cases: dict[CaseKey, CaseFigures]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["cases"] = [[*key, asdict(figs)] for key, figs in self.cases.items()]
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RunSummary:
        """The summary `to_json` wrote. Raises KeyError, TypeError or ValueError when `raw`
        is not one (a damaged cache entry)."""
        cases = {}
        for *key, figs in raw["cases"]:
            if len(key) != 4 or not all(isinstance(k, str) for k in key):
                raise ValueError(f"bad case key {key!r}")
            programs = figs.get("programs", {})
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in programs.items()):
                raise ValueError("bad program fingerprints")
            cases[(key[0], key[1], key[2], key[3])] = CaseFigures(
                speedups=_intervals(figs["speedups"]),
                times=_intervals(figs["times"]),
                programs=dict(programs),
                compiled={
                    str(mode): ProgramMetrics.from_json(m)
                    for mode, m in figs.get("compiled", {}).items()
                },
            )
        geomeans = {
            str(device): [(str(mode), None if v is None else float(v)) for mode, v in values]
            for device, values in raw["geomeans"].items()
        }
        fields = {k: raw[k] for k in cls.__dataclass_fields__ if k not in ("cases", "geomeans")}
        summary = cls(**fields, cases=cases, geomeans=geomeans)
        _check_types(summary)
        return summary


def _intervals(raw: Mapping[str, Any]) -> dict[str, Interval]:
    out = {}
    for mode, (v, lo, hi) in raw.items():
        out[str(mode)] = (float(v), _number(lo), _number(hi))
    return out


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


_TEXT = ("run_id", "started_at", "name", "started_text", "machine", "host", "jax")


def _check_types(s: RunSummary) -> None:
    """A cache entry edited or damaged into other types must not reach a template."""
    ok = (
        all(isinstance(getattr(s, f), str) for f in _TEXT)
        and isinstance(s.complete, bool)
        and all(isinstance(getattr(s, f), str | None) for f in ("label", "commit"))
        and all(isinstance(x, str) for x in [*s.flags, *s.workloads])
        and all(isinstance(k, str) and isinstance(v, str) for k, v in s.devices.items())
        and all(isinstance(k, str) and isinstance(v, str) for k, v in s.fingerprint.items())
    )
    if not ok:
        raise TypeError("a summary field has the wrong type")


def _interval(value: float, low: float | None, high: float | None) -> Interval | None:
    """(value, low, high), or None when the value cannot be drawn on a log axis."""
    if not (math.isfinite(value) and value > 0):
        return None
    return (float(value), low, high)


def case_figures(run: Run, key: CaseKey) -> CaseFigures:
    """The speedups and times of one case of `run`, as the history draws them."""
    speedups, times = {}, {}
    case = analyse(run).case(key)
    for mode in JAX_MODES:
        f = case.get(mode) if case is not None else None
        r = f.speedup if f is not None else None
        if r is not None and (iv := _interval(r.value, r.low, r.high)) is not None:
            speedups[mode.value] = iv
    for mode in ALL_MODES:
        f = case.get(mode) if case is not None else None
        t = f.time if f is not None and f.ok else None
        if t is not None and (iv := _interval(t.value, t.low, t.high)) is not None:
            times[mode.value] = iv
    programs = {}
    for mode in JAX_MODES:
        m = run.get(key, mode)
        if m is not None and m.compile is not None and m.compile.program_fingerprint:
            programs[mode.value] = m.compile.program_fingerprint
    compiled = {}
    for mode in PROGRAM_MODES:
        m = run.get(key, mode)
        metrics = ProgramMetrics.of(m.compile) if m is not None and m.compile else None
        if metrics is not None:
            compiled[mode.value] = metrics
    return CaseFigures(speedups=speedups, times=times, programs=programs, compiled=compiled)


def environment_fingerprint(run: Run) -> dict[str, str]:
    """What about a run's machine and software changes its figures, as text by name."""
    env = run.environment
    out: dict[str, str] = {}
    for key in ("host", "cpu", "backend", "python", "x64"):
        if env.get(key) not in (None, ""):
            out[key] = str(env.get(key))
    out["matmul_precision"] = run.matmul_precision  # older runs: JAX's default
    for name, version in data.versions(run).items():
        if version is not None:  # not installed, or not recorded: shown as '—', not 'None'
            out[str(name)] = str(version)
    kinds = sorted({c.device_kind for c in run.cases() if c.device_kind})
    if kinds:
        out["devices"] = ", ".join(kinds)
    recorded = threads.recorded_summary(env)
    if recorded:
        out["threads"] = recorded
    return out


def summarize(run: Run) -> RunSummary:
    """The index's and the history's view of `run`."""
    settings = run.config.settings
    devices = data.device_labels(run)
    return RunSummary(
        run_id=run.run_id,
        started_at=str(run.started_at),
        complete=bool(run.complete),
        name=data.run_name(run),
        label=data.run_label(run),
        commit=data.commit(run),
        started_text=data.started_text(run),
        machine=data.machine(run),
        host=data.host(run),
        flags=[f for f in ("quick", "sweep", "x64") if getattr(settings, f, False)]
        + analyse(run).machine_flags,
        devices={d: data.device_title(run, d) for d in devices},
        jax=str(data.versions(run).get("jax") or "—"),
        workloads=data.workloads(run),
        geomeans={
            d: [(g.mode.value, g.value) for g in data.geomean_speedups(run, d)] for d in devices
        },
        fingerprint=environment_fingerprint(run),
        cases={c.key: case_figures(run, c.key) for c in run.cases() if not data.is_sweep_case(c)},
    )


# ---------------------------------------------------------------------------------------
# The cache beside the runs


@functools.cache
def _generation() -> str:
    """Entries hold only for the code that computed them: this module, the derived data and
    every jitbench module it computes with (statistics, model, the analysis layer, the
    judged diagnostics' codes, sweep labels, formatting), hashed from their source, so
    editing any of them in a checkout makes old entries stale too."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    modules = (data, stats, model, estimates, figures, threads, judgement, machine, fmt, workload)
    for module in modules:
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def cache_path(run_file: Path) -> Path:
    return run_file.parent / CACHE_FOLDER / run_file.name


def _usable_folder(runs_dir: Path) -> bool:
    """Whether the cache folder in `runs_dir` may be used: a folder of its own or not there
    yet. A link there (an artifact restored in CI can carry one) is never followed: the
    cache is then neither read, written nor pruned, and every run is summarised afresh."""
    st = lstat_or_none(runs_dir / CACHE_FOLDER)
    return st is None or stat.S_ISDIR(st.st_mode)


#: The biggest cache entry read (a summary is a few kB a workload).
_ENTRY_LIMIT = 64 * 2**20


def cached(run_file: Path, stamp: Stamp) -> RunSummary | None:
    """The summary stored for this version (`stamp`) of `run_file`, or None (none stored,
    stale, or unreadable: all mean "summarise the run again")."""
    if not _usable_folder(run_file.parent):
        return None
    try:
        entry, _ = read_regular(cache_path(run_file), limit=_ENTRY_LIMIT, follow_links=False)
        raw = json.loads(entry.decode("utf-8"))
        if raw["generation"] != _generation() or tuple(raw["stamp"]) != stamp:
            return None
        return RunSummary.from_json(raw["summary"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(run_file: Path, stamp: Stamp, summary: RunSummary) -> None:
    """Keep `summary` for this version of `run_file` (best effort: a folder that cannot be
    written only means summarising again next time)."""
    if not _usable_folder(run_file.parent):
        return
    entry = {"generation": _generation(), "stamp": list(stamp), "summary": summary.to_json()}
    with contextlib.suppress(OutputError):
        write_text_atomic(cache_path(run_file), json.dumps(entry, separators=(",", ":")))


def prune(runs_dir: Path, keep: Iterable[str]) -> None:
    """Drop the entries of run files no longer in `runs_dir`, so the cache stays as small
    as the folder (best effort)."""
    wanted = set(keep)
    if not _usable_folder(runs_dir):
        return
    try:
        entries = list((runs_dir / CACHE_FOLDER).iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name not in wanted:
            with contextlib.suppress(OSError):  # a folder put there, say: left alone
                entry.unlink(missing_ok=True)


def stamp_of_file(path: Path) -> Stamp:
    """The stamp of `path` as it is now (raises OSError when it is gone)."""
    return stamp_of(os.stat(path))


def run_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The run files that `paths` name: a file as it is; a folder's *.json and, for a
    `--out` folder, its runs/*.json.

    Raises:
        ResultsFormatError: a path that does not exist, or no run file in them all.
    """
    files: list[Path] = []
    given = [Path(p) for p in paths]
    for path in given:
        if path.is_dir():
            files += sorted(path.glob("*.json")) + sorted(
                OutputLayout(path).runs_dir.glob("*.json")
            )
        elif path.exists():
            files.append(path)
        else:
            raise ResultsFormatError(
                f"{str(path)!r} does not exist; pass run JSON files or a folder of them "
                "(a `jitbench run --out` folder)."
            )
    if not files:
        where = ", ".join(repr(str(p)) for p in given) or "nothing"
        raise ResultsFormatError(
            f"no run JSON files in {where} (*.json or runs/*.json); pass the --out folder of "
            "`jitbench run` or its run files."
        )
    return _distinct_files(files)


def _distinct_files(files: list[Path]) -> list[Path]:
    """`files` without repeats: a path given twice, or two names of one file (a hard
    link, a symbolic link to another), kept once."""
    seen: set[tuple[int, int] | Path] = set()
    out = []
    for path in files:
        try:
            st = path.stat()
            key: tuple[int, int] | Path = (st.st_dev, st.st_ino)
        except OSError:
            key = path  # unreadable: loading it says why
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


@dataclass(frozen=True)
class Summaries:
    """The runs `summaries_of` read, and one line for each file of a folder it left out
    (not a valid run) or each copy of a run it kept once."""

    runs: list[RunSummary]
    notes: list[str]


def summaries_of(paths: Iterable[str | os.PathLike[str]]) -> Summaries:
    """The summaries of every run file `paths` name (`run_files`), each run once: the
    cached one where the cache holds this version of the file (it is only read here), else
    the run loaded and summarised. A file found in a folder that is not a valid run is
    left out with a note (the index lists it as broken); a file named is loaded or refused.

    Raises:
        ResultsFormatError: no run files, a named file that is not a valid run, or two
            different runs with the same run id (as `compare` refuses them).
    """
    given = {Path(p) for p in paths if not Path(p).is_dir()}
    out: dict[str, tuple[RunSummary, Path]] = {}
    notes = []
    for path in run_files(paths):
        try:
            known = cached(path, stamp_of_file(path))
        except OSError:
            known = None
        try:
            summary = known if known is not None else summarize(load_run(path))
        except ResultsFormatError as exc:
            if path in given:
                raise
            notes.append(f"left out {str(path)!r}: {exc}")
            continue
        first = out.setdefault(summary.run_id, (summary, path))
        if first[1] == path:
            continue
        if first[0] != summary:
            raise ResultsFormatError(
                f"{str(first[1])!r} and {str(path)!r} are different runs with the same run id "
                f"{summary.run_id!r}, which history (like compare) cannot tell apart; move "
                "one away, or give its run a new id."
            )
        notes.append(f"{str(path)!r} holds the same run as {str(first[1])!r}: counted once")
    if not out:
        raise ResultsFormatError(
            "no valid run among the run files given; " + (notes[0] if notes else "")
        )
    return Summaries([s for s, _ in out.values()], notes)

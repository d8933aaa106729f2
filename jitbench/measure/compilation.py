"""Cold compilation: the first call's stages, compile-event counting and program analysis.

Compiles are counted and split with `jax.monitoring` duration events. With the persistent
cache off, every `backend_compile_duration` event is a real XLA compile, and an in-memory
cache hit emits none, so a cache hit is never reported as a compile. One cold first call of
a jitted function yields its trace, lowering and XLA compile seconds (`cold_call`); the
compiled program's analysis is then read from the executable that call left in JAX's
in-memory cache (`cached_analysis`), without a second compile. `cold_aot_breakdown` times
the AOT stages (`.trace`, `.lower`, `.compile`) instead: `jitbench profile` keeps it for the
IR texts, and it is the reference the event split was checked against
(`tools/compile_split.py`).

`sharing_compiles` lets the processes of one `--processes` run share the programs their
cold calls compile: the process that leads a group of cases (the first, or the second
beside it: `runner.overlap`) compiles (cold, timed as ever) and keeps each program on
disk; the others load it instead of compiling again.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import jax

from jitbench.measure.environment import jax_flag
from jitbench.suite.jitted import is_jitted

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
#: A program loaded from the persistent cache (only ever on in `sharing_compiles`).
CACHE_LOAD_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"


@dataclass
class CompileEvents:
    """Compile events seen while a `count_compiles()` block was active."""

    compile_count: int = 0
    load_count: int = 0  # programs loaded from the persistent cache instead
    durations_s: dict[str, float] = field(default_factory=dict)

    def add(self, event: str, duration_s: float) -> None:
        self.durations_s[event] = self.durations_s.get(event, 0.0) + duration_s
        if event == BACKEND_COMPILE_EVENT:
            self.compile_count += 1
        elif event == CACHE_LOAD_EVENT:
            self.load_count += 1

    def cold_stage(self) -> str:
        """Where a jitted function's cold first call is, by the events seen so far: what
        a `--timeout` reached in it names (`limits.doing`)."""
        compile_s = self.durations_s.get(BACKEND_COMPILE_EVENT)
        if self.load_count or compile_s is not None:
            took = f" (XLA's compile took {compile_s:.1f} s)" if not self.load_count else ""
            return f"the compiled program's first run{took}"
        if LOWER_EVENT in self.durations_s:
            return "XLA's compile"
        return "tracing or lowering"


_active: list[CompileEvents] = []
_lock = threading.Lock()
_listener_installed = False


def _listener(event: str, duration_secs: float, **_kwargs: Any) -> None:
    # jax.monitoring passes extra keyword arguments in newer versions; accept and ignore.
    for sink in _active:
        sink.add(event, duration_secs)


def _install_listener() -> None:
    # One process-wide listener that feeds whichever counters are active; registering
    # and unregistering per block would need an unregister API JAX 0.5 lacks.
    global _listener_installed
    with _lock:
        if not _listener_installed:
            jax.monitoring.register_event_duration_secs_listener(_listener)
            _listener_installed = True


@contextmanager
def count_compiles() -> Iterator[CompileEvents]:
    """Count XLA compiles (and sum trace/lower/compile durations) inside the block."""
    _install_listener()
    events = CompileEvents()
    _active.append(events)
    try:
        yield events
    finally:
        # By identity: nested counters see the same events, so they compare equal.
        del _active[next(i for i, e in enumerate(_active) if e is events)]


@contextmanager
def _cache_config(flags: Mapping[str, Any]) -> Iterator[None]:
    """JAX's persistent-cache `flags` for the block, then as they were. JAX decides once
    per process whether its cache is in use (at the first compile after a reset), so a
    flag changed without a reset may not be obeyed: the cache is reset on both sides."""
    before = {name: jax_flag(name) for name in flags}
    try:  # set inside: an alarm (`--timeout`) may land anywhere; each flag goes back
        for name, value in flags.items():
            jax.config.update(name, value)
        _reset_persistent_cache()
        yield
    finally:
        for name, value in before.items():
            with contextlib.suppress(Exception):
                jax.config.update(name, value)
        _reset_persistent_cache()


def _reset_persistent_cache() -> None:
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()


@contextmanager
def persistent_cache_disabled() -> Iterator[None]:
    """Turn the persistent compilation cache off so compile times are real compiles."""
    with _cache_config({"jax_enable_compilation_cache": False}):
        yield


#: Where cold calls keep (or find) their programs while `sharing_compiles` is active.
_shared: Path | None = None


@contextmanager
def sharing_compiles(directory: Path) -> Iterator[None]:
    """Within the block, cold calls (`cold_call(share=True)`) keep the programs they
    compile under `directory`, and load a program from there instead of compiling it when
    it is there already (JAX's persistent compilation cache, on for those calls only).

    The process leading a group of cases in a `--processes` run opens it with an empty
    folder, and each device and mode of the group takes a subfolder of its own
    (`shared_subfolder`), so its cold calls are real compiles: no device loads another's
    program (JAX leaves the device out of a GPU program's key), and writing the programs
    added no time that could be told from noise (jit first calls 0.4 % and eager ones 5 %
    faster *with* the writes, over the default suite). The other processes open the
    group with the same folder and load what the first compiled, about four times faster
    than compiling. A loaded program is no compile: it is not counted, it has no stages
    to report (`prepare_jit`), and a worker's compile figures are dropped
    (`scheduler.measure_selection`).
    """
    global _shared
    directory.mkdir(parents=True, exist_ok=True)
    previous, _shared = _shared, directory
    try:
        yield
    finally:
        _shared = previous


def shared_folder() -> Path | None:
    """The folder the cold calls share programs in now (`sharing_compiles`), or None."""
    return _shared


@contextmanager
def shared_subfolder(name: str) -> Iterator[None]:
    """Within `sharing_compiles`, the cold calls of the block share under `name` only
    (one device and mode of a group of cases); elsewhere nothing changes."""
    global _shared
    previous = _shared
    if previous is not None:
        _shared = previous / re.sub(r"[^A-Za-z0-9._-]", "_", name)
        _shared.mkdir(parents=True, exist_ok=True)
    try:
        yield
    finally:
        _shared = previous


@contextmanager
def loading_shared(name: str) -> Iterator[None]:
    """Within `sharing_compiles`, the block's calls load the programs the cold calls of
    `shared_subfolder(name)` kept, instead of compiling them again: for a case's later
    sampling round, whose re-warm follows the other cases' `clear_caches` (eager's every
    primitive, and jit's program, would otherwise compile again). Elsewhere nothing
    changes."""
    if _shared is None:
        yield
        return
    with shared_subfolder(name), _cold_call_cache(share=True):
        yield


def _cold_call_cache(share: bool) -> contextlib.AbstractContextManager[None]:
    """The shared folder, every program kept however small or quick to compile (JAX's
    defaults keep only those over a second), for a sharing cold call; else no cache."""
    if not share or _shared is None:
        return persistent_cache_disabled()
    flags: dict[str, Any] = {
        "jax_enable_compilation_cache": True,
        "jax_compilation_cache_dir": str(_shared),
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": -1,
    }
    if hasattr(jax.config, "jax_persistent_cache_enable_xla_caches"):
        # Else XLA's own caches (GPU autotuning) would follow the cache into the folder,
        # and the leading process's compiles would cost what they do not cost a user.
        flags["jax_persistent_cache_enable_xla_caches"] = ""
    return _cache_config(flags)


@dataclass(frozen=True, kw_only=True)
class AotBreakdown:
    """Seconds per AOT stage of one cold compile, plus what the compiled program says."""

    trace_s: float
    lower_s: float
    compile_s: float
    compile_count: int
    jaxpr_eqn_count: int | None
    flops: float | None
    transcendentals: float | None
    bytes_accessed: float | None
    memory: dict[str, int] | None
    hlo_fingerprint: str | None
    while_loop_count: int | None = None
    hlo_text: str | None = None
    jaxpr_text: str | None = None


def count_jaxpr_eqns(jaxpr: Any) -> int:
    """Equations in a jaxpr, including those of nested jaxprs (loop bodies, branches)."""
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in getattr(inner, "eqns", ()):
        total += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    total += count_jaxpr_eqns(sub)
    return total


def _sub_jaxprs(eqn: Any) -> Iterator[Any]:
    for value in eqn.params.values():
        for sub in value if isinstance(value, (tuple, list)) else (value,):
            if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                yield sub


def jaxpr_takes_gradient(jaxpr: Any) -> bool:
    """Whether a jaxpr holds autodiff: an equation traced under `jvp(…)` or
    `transpose(…)` (JAX records the transformations in each equation's name stack)."""
    inner = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in getattr(inner, "eqns", ()):
        stack = str(getattr(getattr(eqn, "source_info", None), "name_stack", ""))
        if "jvp(" in stack or "transpose(" in stack:
            return True
        if any(jaxpr_takes_gradient(sub) for sub in _sub_jaxprs(eqn)):
            return True
    return False


def takes_gradient(
    fn: Callable[..., Any],
    *,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    static_argnames: tuple[str, ...] = (),
) -> bool:
    """Whether `fn(*args, **kwargs)` differentiates (`jaxpr_takes_gradient` of its trace;
    tracing only, no compile). False when it cannot be traced."""
    try:
        traced = jax.jit(fn, static_argnames=static_argnames).trace(*args, **kwargs)
    except Exception:
        return False
    return jaxpr_takes_gradient(traced.jaxpr)


def _cost_dict(cost: Any) -> Mapping[str, Any] | None:
    # A dict in newer JAX; a list with one dict per computation (the first is the
    # entry computation) in older JAX; None where the backend has no cost model.
    if isinstance(cost, (list, tuple)):
        cost = next((c for c in cost if isinstance(c, Mapping)), None)
    return cost if isinstance(cost, Mapping) else None


def _non_negative(value: Any) -> float | None:
    # XLA reports -1 (or nothing) for a figure it could not estimate.
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def cost_figures(compiled: Any) -> tuple[float | None, float | None, float | None]:
    """(flops, transcendentals, bytes accessed) from XLA's cost analysis, None if absent.

    `cost_analysis()` returns a dict (newer JAX), a list of dicts (older JAX), or None /
    raises where a backend has no cost model. XLA counts a while loop's body once, so for
    `lax.fori_loop` / `lax.scan` programs the figures are per iteration, not per call.
    """
    try:
        cost = _cost_dict(compiled.cost_analysis())
    except Exception:
        return None, None, None
    if cost is None:
        return None, None, None
    return (
        _non_negative(cost.get("flops")),
        _non_negative(cost.get("transcendentals")),
        _non_negative(cost.get("bytes accessed")),
    )


_MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
    "peak_bytes": "peak_memory_in_bytes",
}


def memory_figures(compiled: Any) -> dict[str, int] | None:
    """Argument/output/temp/peak bytes from `memory_analysis()`, None where unsupported."""
    try:
        mem = compiled.memory_analysis()
    except Exception:
        return None
    if mem is None:
        return None
    out = {}
    for ours, theirs in _MEMORY_FIELDS.items():
        value = _non_negative(getattr(mem, theirs, None))
        if value is not None:
            out[ours] = int(value)
    return out or None


# Source locations in the HLO text (metadata={...} on each instruction and the
# FileNames/FunctionNames/FileLocations/StackFrames tables) change when the code merely
# moves; they are dropped so the fingerprint changes only when the program does.
# Each run of plain characters is taken whole (`(?=(run))\1`, an atomic group), which
# matches what a character at a time did, in half the time, and never backtracks into it.
_METADATA_RE = re.compile(r',\s*metadata=\{(?:(?=([^{}"]+))\1|"(?:(?=([^"\\]+))\2|\\.)*")*\}')
_LOCATION_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def normalised_hlo(text: str) -> str:
    """HLO text without source-location metadata (what the fingerprint hashes)."""
    kept: list[str] = []
    in_table = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in _LOCATION_TABLES:
            in_table = True
            continue
        if in_table:
            if not stripped:
                in_table = False
            continue
        kept.append(_METADATA_RE.sub("", line) if "metadata=" in line else line)
    return "\n".join(kept).strip()


def hlo_fingerprint(text: str) -> str:
    """A short hash of the optimised HLO, stable across runs and source-line moves."""
    return _hash(normalised_hlo(text))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_NAME_RE = re.compile(r"%([A-Za-z_][\w.\-]*)")
_MODULE_RE = re.compile(r"^HloModule\s+[^,\s]+", re.M)
#: A line split into its runs of name characters (the odd items) and what lies between.
_RUNS_RE = re.compile(r"([\w.\-]+)")
#: An instruction: '%name = type opcode(' (a tuple type may hold spaces).
_INSTRUCTION_RE = re.compile(
    r"^\s*(?:ROOT\s+)?%[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(", re.M
)


def program_text(text: str) -> str:
    """Optimised HLO modulo names and metadata: the module's name dropped, every
    instruction and computation renamed by order of first appearance (%v0, %v1, …), so a
    renamed function or a moved source line leaves the program text unchanged."""
    return _renamed(normalised_hlo(text))


def _renamed(normalised: str) -> str:
    """`program_text` of a `normalised_hlo` text: two passes over its lines, each linear.

    A name is what follows a `%`. Every whole run of name characters that is a name is
    renamed, with its `%` where one is before it (a `%` right after another run stays,
    and the new name brings its own). One regular expression of every name, as this was
    before, tried each name at each character: 3.8 minutes for the 35,026 names of a
    200-step unrolled loop."""
    lines = _MODULE_RE.sub("HloModule m", normalised).split("\n")
    first_seen = dict.fromkeys(chain.from_iterable(map(_NAME_RE.findall, lines)))
    if not first_seen:
        return "\n".join(lines)
    names = {name: f"v{i}" for i, name in enumerate(first_seen)}
    split = _RUNS_RE.split
    for n, line in enumerate(lines):
        parts = split(line)
        for i in range(1, len(parts), 2):
            new = names.get(parts[i])
            if new is None:
                continue
            before = parts[i - 1]
            # Its `%` (not one that follows another run) goes with the old name.
            took_percent = before.endswith("%") and (len(before) > 1 or i == 1)
            parts[i] = new if took_percent else f"%{new}"
        lines[n] = "".join(parts)
    return "\n".join(lines)


def program_fingerprint(text: str) -> str:
    """A short hash of `program_text`: equal for the same program whatever its names."""
    return fingerprint_of_program_text(program_text(text))


def fingerprint_of_program_text(normalised: str) -> str:
    """`program_fingerprint` of a text `program_text` already normalised."""
    return _hash(normalised)


def opcode_counts(text: str) -> dict[str, int]:
    """How many instructions of each opcode the optimised HLO holds (every computation,
    fused ones included), by opcode name."""
    return _opcodes(normalised_hlo(text))


def _opcodes(normalised: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for match in _INSTRUCTION_RE.finditer(normalised):
        opcode = match.group(1)
        counts[opcode] = counts.get(opcode, 0) + 1
    return dict(sorted(counts.items()))


@dataclass(frozen=True, kw_only=True)
class ProgramTexts:
    """What jitbench reads of one optimised HLO text, normalised once."""

    hlo_fingerprint: str
    program_text: str
    program_fingerprint: str
    opcodes: dict[str, int]
    while_loop_count: int


def program_texts(text: str) -> ProgramTexts:
    """`hlo_fingerprint`, `program_text`, `program_fingerprint`, `opcode_counts` and
    `while_loop_count` of `text`, the same as each alone, with one normalisation."""
    normalised = normalised_hlo(text)
    renamed = _renamed(normalised)
    return ProgramTexts(
        hlo_fingerprint=_hash(normalised),
        program_text=renamed,
        program_fingerprint=_hash(renamed),
        opcodes=_opcodes(normalised),
        while_loop_count=_while_loops(normalised),
    )


def generated_code_bytes(compiled: Any) -> int | None:
    """Bytes of machine code the backend generated for the program; None where it does
    not say (the CPU backend of JAX 0.10 reports 0, read as unknown)."""
    try:
        size = int(compiled.runtime_executable().size_of_generated_code_in_bytes())
    except Exception:
        return None
    return size if size > 0 else None


_WHILE_RE = re.compile(r"\swhile\(")


def while_loop_count(hlo_text: str) -> int:
    """While loops in optimised HLO. XLA's cost analysis counts each loop body once, so
    flops and bytes of a program with loops are per iteration, not per call."""
    return _while_loops(normalised_hlo(hlo_text))


def _while_loops(normalised: str) -> int:
    return sum(1 for _ in _WHILE_RE.finditer(normalised))


_cache_generation = 0


def clear_caches() -> None:
    """`jax.clear_caches()`, counted: a live case whose executables were dropped by a later
    case's cold measurement recompiles before it is timed again (see `cache_generation`)."""
    global _cache_generation
    jax.clear_caches()
    _cache_generation += 1


def cache_generation() -> int:
    """How many times `clear_caches` has run in this process."""
    return _cache_generation


@dataclass(frozen=True, kw_only=True)
class ProgramAnalysis:
    """What a compiled program says about itself; None where a backend cannot tell."""

    jaxpr_eqn_count: int | None = None
    flops: float | None = None
    transcendentals: float | None = None
    bytes_accessed: float | None = None
    memory: dict[str, int] | None = None
    hlo_fingerprint: str | None = None
    while_loop_count: int | None = None
    program_fingerprint: str | None = None
    hlo_opcodes: dict[str, int] | None = None
    code_bytes: int | None = None
    hlo_text: str | None = None
    jaxpr_text: str | None = None
    #: `program_text` of the optimised HLO (names and metadata aside): what a program
    #: diff shows.
    program_text: str | None = None


def analyse(traced: Any, compiled: Any, *, keep_text: bool = False) -> ProgramAnalysis:
    """The analysis of an AOT `Traced` and its `Compiled` (cost, memory, HLO, jaxpr size)."""
    flops, transcendentals, bytes_accessed = cost_figures(compiled)
    try:
        hlo = compiled.as_text()
    except Exception:
        hlo = None
    jaxpr = getattr(traced, "jaxpr", None)
    texts = program_texts(hlo) if hlo else None
    return ProgramAnalysis(
        jaxpr_eqn_count=count_jaxpr_eqns(jaxpr) if jaxpr is not None else None,
        flops=flops,
        transcendentals=transcendentals,
        bytes_accessed=bytes_accessed,
        memory=memory_figures(compiled),
        hlo_fingerprint=texts.hlo_fingerprint if texts else None,
        while_loop_count=texts.while_loop_count if texts else None,
        program_fingerprint=texts.program_fingerprint if texts else None,
        hlo_opcodes=texts.opcodes if texts else None,
        code_bytes=generated_code_bytes(compiled),
        hlo_text=hlo if keep_text else None,
        jaxpr_text=str(jaxpr) if keep_text and jaxpr is not None else None,
        program_text=texts.program_text if texts else None,
    )


def cached_analysis(
    jitted: Any, *, args: tuple[Any, ...], kwargs: Mapping[str, Any], keep_text: bool = False
) -> tuple[ProgramAnalysis, int]:
    """The analysis of the program a call `jitted(*args, **kwargs)` compiled: (analysis,
    XLA compiles it took).

    After such a call, `jitted.trace(...).lower().compile()` finds the trace, the lowering
    and the executable in JAX's in-memory caches (about a millisecond, no XLA compile); it
    compiles again only if the caches were cleared since. Raises what tracing raises.
    """
    with count_compiles() as events:
        traced = jitted.trace(*args, **kwargs)
        compiled = traced.lower().compile()
    return analyse(traced, compiled, keep_text=keep_text), events.compile_count


@dataclass(frozen=True)
class ColdCall:
    """One call timed with JAX's compile events: its seconds (trace, lower, compile and
    run), the events it emitted, and its output."""

    seconds: float
    events: CompileEvents
    output: Any

    @property
    def compile_count(self) -> int:
        """XLA compiles in the call. JAX (0.5 to 0.10) times a program loaded from the
        persistent cache as a backend compile too, so loads are taken off."""
        return max(0, self.events.compile_count - self.events.load_count)

    @property
    def loaded(self) -> bool:
        """Whether the call loaded a program from the persistent cache (`sharing_compiles`)."""
        return self.events.load_count > 0

    def stage_s(self, event: str) -> float | None:
        """Seconds the call spent in one stage (`TRACE_EVENT`, `LOWER_EVENT`,
        `BACKEND_COMPILE_EVENT`); None when no such event was emitted."""
        return self.events.durations_s.get(event)

    @property
    def stages_s(self) -> tuple[float, float, float] | None:
        """(trace, lower, XLA compile) seconds of a jitted call's compile, or None when an
        event is missing (a cache hit, or a JAX that does not emit it) or the program
        was loaded, not compiled."""
        if self.loaded:
            return None
        parts = [self.stage_s(e) for e in (TRACE_EVENT, LOWER_EVENT, BACKEND_COMPILE_EVENT)]
        if any(p is None for p in parts):
            return None
        trace_s, lower_s, compile_s = (float(p or 0.0) for p in parts)
        return trace_s, lower_s, compile_s


def cold_call(call: Callable[[], Any], *, clear: bool = True, share: bool = False) -> ColdCall:
    """Time one call with the persistent cache off, counting and splitting its compiles.

    `clear` empties JAX's in-memory caches first (`clear_caches`); a caller that measures
    several cold calls after one clear passes False. With `share`, while `sharing_compiles`
    is active, the call keeps its programs in (or loads them from) the shared folder
    instead. The call must block on its output (the modes module's calls do). Raises
    whatever the call raises.
    """
    if clear:
        clear_caches()
    with _cold_call_cache(share), count_compiles() as events:
        t0 = time.perf_counter()
        out = call()
        elapsed = time.perf_counter() - t0
    return ColdCall(seconds=elapsed, events=events, output=out)


def cold_aot_breakdown(
    fn: Callable[..., Any],
    *,
    static_argnames: tuple[str, ...],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    static_argnums: tuple[int, ...] = (),
    keep_text: bool = False,
) -> AotBreakdown:
    """Trace, lower and compile `fn` with caches cleared, timing each stage on its own
    (`fn` itself when it is already jitted, with its own static arguments).

    Raises whatever tracing or compiling raises (e.g. a ConcretizationTypeError).
    """
    clear_caches()
    jitted: Any = (
        fn
        if is_jitted(fn)
        else jax.jit(
            fn, static_argnums=static_argnums or None, static_argnames=static_argnames or None
        )
    )
    with persistent_cache_disabled(), count_compiles() as events:
        t0 = time.perf_counter()
        traced = jitted.trace(*args, **kwargs)
        t1 = time.perf_counter()
        lowered = traced.lower()
        t2 = time.perf_counter()
        compiled = lowered.compile()
        t3 = time.perf_counter()
    a = analyse(traced, compiled, keep_text=keep_text)
    return AotBreakdown(
        trace_s=t1 - t0,
        lower_s=t2 - t1,
        compile_s=t3 - t2,
        compile_count=events.compile_count,
        jaxpr_eqn_count=a.jaxpr_eqn_count,
        flops=a.flops,
        transcendentals=a.transcendentals,
        bytes_accessed=a.bytes_accessed,
        memory=a.memory,
        hlo_fingerprint=a.hlo_fingerprint,
        while_loop_count=a.while_loop_count,
        hlo_text=a.hlo_text,
        jaxpr_text=a.jaxpr_text,
    )


def cold_first_call(call: Callable[[], Any]) -> tuple[float, int, Any]:
    """Time one call with in-memory caches cleared: (seconds, compiles seen, output).

    The call must block on its output (the modes module's calls do).
    """
    cold = cold_call(call)
    return cold.seconds, cold.compile_count, cold.output

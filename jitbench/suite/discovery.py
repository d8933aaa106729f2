"""Discover suite files by path, collect their workloads, and select workloads by name or tag.

A folder is searched for `*.py` files not starting with `_`; a file that sets
``__jitbench_collect__ = False`` is loaded only when named explicitly (`--suite FILE`).
A file that fails to import (whatever it raises, sys.exit() included) is recorded as a
`SuiteLoadError` naming file:line and the others still load.
With no path given, `./suites` is searched, or, where there is none, the default suite
installed with jitbench (`default_suite_path`).
A suite that is not Python files is named with a scheme: `npbench:PATH` (an NPBench clone,
`jitbench.suite.npbench`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitbench.errors import SuiteError, unknown_name_message
from jitbench.results.safe_io import read_regular
from jitbench.suite.workload import Workload

DEFAULT_SUITE = Path("suites")
#: The default suite as installed with the package (`suites/` of the repository, shipped as
#: this package by setup.py; in an editable install it maps back to `suites/`).
PACKAGED_SUITE = "jitbench.default_suite"


def default_suite_path() -> Path | None:
    """Where the default suite is installed: the `jitbench.default_suite` package of an
    installed jitbench, or the `suites/` folder beside the `jitbench` package of a source
    checkout; None when neither exists."""
    try:
        spec = importlib.util.find_spec(PACKAGED_SUITE)
    except ImportError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    checkout = Path(__file__).resolve().parents[2] / "suites"
    return checkout if checkout.is_dir() else None


def default_roots() -> list[Path]:
    """The suite paths searched when none is given: `./suites` if it exists, else the
    installed default suite (`default_suite_path`), else `./suites` (which then fails
    with the usual message)."""
    if DEFAULT_SUITE.exists():
        return [DEFAULT_SUITE]
    installed = default_suite_path()
    return [installed] if installed is not None else [DEFAULT_SUITE]


@dataclass(frozen=True)
class SuiteLoadError:
    """A suite file that could not be imported."""

    path: str
    line: int | None
    exc_type: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.exc_type}: {self.message}"


@dataclass
class Registry:
    """Workloads by name, in discovery order, plus the suite files that failed."""

    workloads: dict[str, Workload] = field(default_factory=dict)
    errors: list[SuiteLoadError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # What a scheme suite leaves out without an error, by suite: (name, why) each.
    left_out: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, wl: Workload, *, path: str) -> None:
        existing = self.workloads.get(wl.name)
        if existing is wl:
            return
        if existing is not None:
            self.errors.append(
                SuiteLoadError(
                    path,
                    None,
                    "SuiteError",
                    f"duplicate workload name {wl.name!r} (first defined at {existing.source}); "
                    "rename one of them with @workload(name=...).",
                )
            )
            return
        self.workloads[wl.name] = wl

    def get(self, name: str) -> Workload:
        """Return a workload by exact name. Raises SuiteError with a close match."""
        try:
            return self.workloads[name]
        except KeyError:
            message = unknown_name_message("workload", name, self.workloads)
            failed = [Path(e.path).name for e in self.errors if e.exc_type != "SuiteError"]
            if failed:  # the workload may live in a file that did not import
                files = " or ".join([", ".join(failed[:-1]), failed[-1]] if failed[:-1] else failed)
                message += f" It may be in {files}, which did not import (see above)."
            raise SuiteError(message) from None

    def select(self, names: Sequence[str] = (), keyword: str | None = None) -> list[Workload]:
        """Workloads named in `names` (all when empty) that match the `-k` expression, each
        once (a name given twice would measure its cases twice in one run)."""
        chosen = (
            [self.get(n) for n in dict.fromkeys(names)] if names else list(self.workloads.values())
        )
        if keyword:
            matcher = compile_keyword(keyword)
            chosen = [w for w in chosen if matcher(w)]
        return chosen

    def select_some(
        self,
        names: Sequence[str] = (),
        keyword: str | None = None,
        *,
        purpose: str = "to run",
        hint: str = "`jitbench list` shows what was found",
    ) -> list[Workload]:
        """`select`, refusing to choose nothing: `run` and `list` alike.

        Raises:
            SuiteError: no workload matched (`purpose` says for what, `hint` what to do).
        """
        chosen = self.select(names, keyword)
        if not chosen:
            failed = len(self.errors)
            broken = f" ({failed} suite file(s) failed to import)" if failed else ""
            what = f" matching -k {keyword!r}" if keyword else ""
            raise SuiteError(f"no workloads{what} {purpose}{broken}; {hint}.")
        return chosen


_TOKEN_RE = re.compile(r"\s*(\(|\)|[^\s()]+)")


def compile_keyword(expression: str):  # type: ignore[no-untyped-def]
    """Compile a pytest-style `-k` expression (`and`, `or`, `not`, parentheses).

    An identifier matches a workload whose name contains it or that has it as a tag.
    Raises SuiteError for a malformed expression.
    """
    tokens = _TOKEN_RE.findall(expression)
    parts: list[str] = []
    idents: list[str] = []
    for tok in tokens:
        if tok in ("and", "or", "not", "(", ")"):
            parts.append(tok)
        else:
            parts.append(f"_m[{len(idents)}]")
            idents.append(tok)
    code_text = " ".join(parts)
    try:
        code = compile(code_text, "<-k>", "eval")
    except SyntaxError:
        raise SuiteError(
            f"invalid -k expression {expression!r}; use names or tags joined by "
            "'and', 'or', 'not' and parentheses."
        ) from None

    def matches(wl: Workload) -> bool:
        hits = [(i in wl.name) or (i in wl.tags) for i in idents]
        return bool(eval(code, {"__builtins__": {}}, {"_m": hits}))

    return matches


def _suite_files(path: Path, *, explicit: bool) -> list[tuple[Path, bool]]:
    if path.is_dir():
        return [(p, False) for p in sorted(path.glob("*.py")) if not p.name.startswith("_")]
    return [(path, explicit)]


def _line_in(path: Path, exc: BaseException) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename) == path:
        return exc.lineno
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    return line


#: Suite files are imported as modules named `jitbench_suite_<stem>_<digest>`.
SUITE_MODULE_PREFIX = "jitbench_suite_"


def workloads_in(module: object) -> list[Workload]:
    """The workloads a suite module defines, in definition order."""
    return [v for v in vars(module).values() if isinstance(v, Workload)]


def suite_file_of(workload: Workload) -> str | None:
    """The suite file that defines `workload` (a module imported here), or None."""
    for name, module in list(sys.modules.items()):
        if not name.startswith(SUITE_MODULE_PREFIX) or module is None:
            continue
        if any(w is workload for w in workloads_in(module)):
            path = getattr(module, "__file__", None)
            return str(Path(path).resolve()) if path else None
    return None


#: The module attribute holding the SHA-256 of the suite file's bytes as imported.
SUITE_DIGEST_ATTR = "__jitbench_sha256__"


#: The most bytes a suite file may hold (a link to /dev/zero must not fill the memory).
MAX_SUITE_BYTES = 64 * 1024 * 1024


def read_suite_bytes(path: str | Path) -> bytes:
    """A suite file's bytes, read without waiting: a named pipe, a device or a socket is
    refused at once (`safe_io.read_regular`: opening a named pipe would wait forever).

    Raises:
        OSError: as `open` does; `safe_io.NotRegularFile`, `safe_io.FileTooBig`.
    """
    return read_regular(path, limit=MAX_SUITE_BYTES)[0]


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, in hex (what a run records of each suite file)."""
    return hashlib.sha256(read_suite_bytes(path)).hexdigest()


def import_suite_file(path: Path) -> object:
    """Import a suite file under a unique module name (kept in sys.modules).

    The module is run from the bytes read here, and their SHA-256 is kept on the module
    (`suite_digest_of`), so a run records the code it measured. Whatever the file raises
    propagates (`load_suite_file` turns it into a SuiteLoadError).
    """
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    mod_name = f"{SUITE_MODULE_PREFIX}{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    source = read_suite_bytes(path)  # a named pipe or a device is refused, never waited on
    spec = importlib.util.spec_from_file_location(mod_name, resolved)
    if spec is None or spec.loader is None:  # pragma: no cover - not a .py file
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    setattr(module, SUITE_DIGEST_ATTR, hashlib.sha256(source).hexdigest())
    sys.modules[mod_name] = module
    try:
        # dont_inherit: this module's `from __future__` imports must not leak into the suite.
        exec(compile(source, str(resolved), "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


def suite_digest_of(workload: Workload) -> str | None:
    """The SHA-256 of the suite file that defines `workload`, as imported, or None."""
    for name, module in list(sys.modules.items()):
        if not name.startswith(SUITE_MODULE_PREFIX) or module is None:
            continue
        if any(w is workload for w in workloads_in(module)):
            return getattr(module, SUITE_DIGEST_ATTR, None)
    return None


@contextmanager
def _stop_signals_noted() -> Iterator[list[int]]:
    """Note SIGINT/SIGTERM/SIGHUP arriving during the block, passing each on to the handler
    in force (which raises the interrupt), so an interrupt from a signal can be told from
    one a suite file raises itself. Only Python-level handlers are wrapped (main thread)."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return
    wrapped: dict[int, Any] = {}
    for sig in _STOP_SIGNALS:
        handler = signal.getsignal(sig)
        if callable(handler):

            def note(signum: int, frame: Any, _handler: Any = handler) -> None:
                arrived.append(signum)
                _handler(signum, frame)

            wrapped[sig] = signal.signal(sig, note)
    try:
        yield arrived
    finally:
        for sig, handler in wrapped.items():
            signal.signal(sig, handler)


_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def load_suite_file(path: Path) -> object | SuiteLoadError:
    """Import a suite file (`import_suite_file`); whatever it raises at import, any
    BaseException (SystemExit from sys.exit(), a KeyboardInterrupt it raises itself,
    GeneratorExit, …), becomes a SuiteLoadError naming file:line. Only an interrupt from
    a real signal (Ctrl-C, SIGTERM) propagates: the user is stopping the run."""
    with _stop_signals_noted() as arrived:
        try:
            return import_suite_file(path)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt) and arrived:
                raise
            return SuiteLoadError(str(path), _line_in(path, exc), *_describe(exc))


def _describe(exc: BaseException) -> tuple[str, str]:
    """(type name, message) of what a suite raised at import, saying what an exit means."""
    if isinstance(exc, SystemExit):
        return "SystemExit", (
            f"the suite file called sys.exit({exc.code!r}) while being imported; a suite file "
            "should only define workloads"
        )
    if isinstance(exc, KeyboardInterrupt):
        return type(exc).__name__, "raised while being imported (no Ctrl-C was pressed)"
    return type(exc).__name__, str(exc)


#: Suites that are not Python files, by scheme: `npbench:PATH` (`--suite`), and
#: `shipped:PATH`, workloads defined interactively and pickled for worker processes.
SUITE_SCHEMES = ("npbench", "shipped")


def split_scheme(spec: str | Path) -> tuple[str, str] | None:
    """(scheme, path) of a suite spec such as ``npbench:/src/npbench``; None for a path."""
    scheme, sep, rest = str(spec).partition(":")
    return (scheme, rest) if sep and scheme in SUITE_SCHEMES else None


def _load_scheme(
    scheme: str, path: str
) -> tuple[list[Workload], list[SuiteLoadError], list[tuple[str, str]]]:
    """The workloads of a scheme suite, its kernels that failed to load, and what it
    leaves out otherwise, with why (an NPBench kernel with no JAX version)."""
    from jitbench.suite import npbench, shipped

    if scheme == shipped.SCHEME:
        return shipped.load(path), [], []
    assert scheme == npbench.SCHEME, scheme
    suite = npbench.load(path)
    errors = [
        SuiteLoadError(p.path, p.line, "SuiteError", f"{p.kernel}: {p.reason}")
        for p in suite.problems
        if p.error
    ]
    left_out = [(p.kernel, p.reason) for p in suite.problems if not p.error]
    return list(suite.workloads), errors, left_out


def suite_of(workload: Workload) -> str | None:
    """Where `workload` can be found again by another process: its suite file, or the
    scheme suite it came from (`Workload.origin`); None when defined elsewhere."""
    return workload.origin or suite_file_of(workload)


def workloads_from_suite(spec: str) -> list[Workload]:
    """The workloads of one suite file or scheme suite (`suite_of`), loaded again.

    Raises:
        Exception: whatever importing the suite raises.
    """
    scheme = split_scheme(spec)
    if scheme is not None:
        return _load_scheme(*scheme)[0]
    return workloads_in(import_suite_file(Path(spec)))


def discover(paths: Sequence[str | Path] = ()) -> Registry:
    """Load every suite file under `paths` into a Registry; with no paths, `./suites` or,
    where there is none, the default suite installed with jitbench (`default_roots`).

    Raises:
        SuiteError: a path does not exist (import failures are collected, not raised).
    """
    registry = Registry()
    for spec in paths:
        scheme = split_scheme(spec)
        if scheme is not None:
            workloads, errors, left_out = _load_scheme(*scheme)
            registry.errors.extend(errors)
            if left_out:
                registry.left_out[str(spec)] = left_out
            registry.files.append(str(spec))
            for wl in workloads:
                registry.add(wl, path=str(spec))
    roots = [Path(p) for p in paths if split_scheme(p) is None]
    if not paths:
        roots = default_roots()
    for root in roots:
        if not root.exists():
            raise SuiteError(
                f"suite path {str(root)!r} does not exist; pass a suite file or folder "
                "with --suite, or run from a folder that has ./suites."
            )
        if root.is_file() and root.suffix != ".py":
            raise SuiteError(
                f"suite path {str(root)!r} is not a Python file; a suite is a .py file of "
                "@workload functions, or a folder of them."
            )
        for file, explicit in _suite_files(root, explicit=True):
            module = load_suite_file(file)
            if isinstance(module, SuiteLoadError):  # a broken suite must not stop the others
                registry.errors.append(module)
                continue
            if not explicit and getattr(module, "__jitbench_collect__", True) is False:
                continue
            registry.files.append(str(file))
            for wl in workloads_in(module):
                registry.add(wl, path=str(file))
    return registry

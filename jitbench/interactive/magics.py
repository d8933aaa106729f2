"""IPython magics: `%jitbench f(x)` and `%%jitbench`, loaded by `%load_ext jitbench`.

Like `%timeit`, but the answer is `bench`'s: the call is measured in NumPy, eager and
jit under the run's protocol. The line (or a cell's last line) must be one call,
``f(x, n=3)``: its function and arguments are evaluated in the user's namespace and
handed to `bench`, which returns the `BenchResult` (shown as the cell's output; assign
it with ``r = %jitbench f(x)``). In a cell, the lines before the call run first, in the
user's namespace, as any cell would.

Options (before the call)::

    -m, --modes numpy,eager,jit   the modes to measure
    -b, --budget SECONDS          the sampling budget per case
    -p, --processes N             worker processes (default 2)
    --x64                         float64 instead of float32
    --numpy NAME                  the NumPy twin, a name in the namespace (e.g. f_np)
    --static a,b                  static argument names (as `jax.jit`'s static_argnames)
    --static-argnums 1,2          static argument positions (as `jax.jit`'s static_argnums)
    --eager call|nojit|auto       how eager mode calls the function (`bench`'s eager=)
    --name NAME                   the workload's name in the run
"""

from __future__ import annotations

import ast
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, needs_local_scope

from jitbench.errors import JitbenchError
from jitbench.interactive.one_call import BenchResult, bench

_VALUE_OPTIONS = {
    "-m": "modes",
    "--modes": "modes",
    "-b": "budget",
    "--budget": "budget",
    "-p": "processes",
    "--processes": "processes",
    "--numpy": "numpy",
    "--static": "static",
    "--static-argnums": "static_argnums",
    "--eager": "eager",
    "--name": "name",
}
_FLAG_OPTIONS = {"--x64": "x64"}

USAGE = (
    "%jitbench [-m MODES] [-b SECONDS] [-p N] [--x64] [--numpy NAME] [--static NAMES] "
    "[--static-argnums N,M] [--eager CHOICE] [--name NAME] f(args)"
)

# The call's function replaced by one that returns the arguments it gets, so `*a`, `**k`,
# keywords and any expression evaluate exactly as in the user's call.
_CAPTURE = "(lambda *args, **kwargs: (args, kwargs))"


def split_options(line: str) -> tuple[dict[str, str | bool], str]:
    """The options at the start of `line` and the rest (the call's text).

    Raises:
        UsageError: an unknown option, or one without its value.
    """
    options: dict[str, str | bool] = {}
    rest = line.strip()
    while rest.startswith("-"):
        word, _, rest = rest.partition(" ")
        key, eq, value = word.partition("=")
        if not key.startswith("--") and len(key) > 2 and key[:2] in _VALUE_OPTIONS:
            key, eq, value = key[:2], "=", key[2:]  # -p1, as %timeit's -n1
        if key in _FLAG_OPTIONS and not eq:
            options[_FLAG_OPTIONS[key]] = True
        elif key in _VALUE_OPTIONS:
            if not eq:
                value, _, rest = rest.strip().partition(" ")
            if not value:
                raise UsageError(f"option {key} needs a value; usage: {USAGE}")
            options[_VALUE_OPTIONS[key]] = value
        else:
            raise UsageError(f"unknown option {key!r}; usage: {USAGE}")
        rest = rest.strip()
    return options, rest


def parse_call(source: str) -> ast.Call:
    """The one call `source` holds, as an AST node.

    Raises:
        UsageError: `source` is not one call expression.
    """
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise UsageError(f"%jitbench measures one call such as f(x): {exc.msg}") from None
    if not isinstance(tree.body, ast.Call):
        raise UsageError(f"%jitbench measures one call such as f(x), got {source.strip()!r}")
    return tree.body


def evaluate_call(
    call: ast.Call, namespace: dict[str, Any], local_ns: dict[str, Any] | None = None
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """(function, positional arguments, keyword arguments) of `call`, evaluated in
    `namespace` (and `local_ns`, where the magic runs inside a function)."""
    fn_tree = ast.fix_missing_locations(ast.Expression(body=call.func))
    fn = eval(compile(fn_tree, "<jitbench>", "eval"), namespace, local_ns)
    capture = ast.parse(_CAPTURE, mode="eval").body
    args_call = ast.Call(func=capture, args=call.args, keywords=call.keywords)
    args_tree = ast.fix_missing_locations(ast.Expression(body=args_call))
    args, kwargs = eval(compile(args_tree, "<jitbench>", "eval"), namespace, local_ns)
    return fn, args, kwargs


def bench_options(
    options: dict[str, str | bool], namespace: dict[str, Any], local_ns: dict[str, Any] | None
) -> dict[str, Any]:
    """The magic's options as `bench`'s keyword arguments.

    Raises:
        UsageError: a value that is not a number, or a NumPy twin not in the namespace.
    """
    out: dict[str, Any] = {}
    if "modes" in options:
        out["modes"] = [m.strip() for m in str(options["modes"]).split(",") if m.strip()]
    for key, kind in (("budget", float), ("processes", int)):
        if key in options:
            try:
                out[key] = kind(options[key])
            except ValueError:
                raise UsageError(
                    f"--{key} takes a {'number of seconds' if kind is float else 'count'}, "
                    f"got {options[key]!r}"
                ) from None
    if options.get("x64"):
        out["x64"] = True
    if "numpy" in options:
        name = str(options["numpy"])
        scope = {**namespace, **(local_ns or {})}
        try:
            out["numpy"] = eval(name, scope)
        except Exception as exc:
            raise UsageError(f"--numpy {name}: {type(exc).__name__}: {exc}") from None
    if "static" in options:
        out["static_argnames"] = tuple(s.strip() for s in str(options["static"]).split(","))
    if "static_argnums" in options:
        try:
            out["static_argnums"] = tuple(
                int(s) for s in str(options["static_argnums"]).split(",") if s.strip()
            )
        except ValueError:
            raise UsageError(
                f"--static-argnums takes positions such as 1 or 0,2, got "
                f"{options['static_argnums']!r}"
            ) from None
    if "eager" in options:
        out["eager"] = str(options["eager"])
    if "name" in options:
        out["name"] = str(options["name"])
    return out


def run_magic(
    line: str, namespace: dict[str, Any], local_ns: dict[str, Any] | None = None
) -> BenchResult:
    """What `%jitbench LINE` does: parse, evaluate, `bench`."""
    options, source = split_options(line)
    kwargs = bench_options(options, namespace, local_ns)
    if not source:
        raise UsageError(f"%jitbench needs a call to measure; usage: {USAGE}")
    call = parse_call(source)
    fn, args, call_kwargs = evaluate_call(call, namespace, local_ns)
    clash = sorted(set(call_kwargs) & set(kwargs))
    if clash:
        raise UsageError(f"the call's keyword {clash[0]!r} is also a %jitbench option")
    try:
        return bench(fn, *args, **kwargs, **call_kwargs)
    except JitbenchError as exc:  # bad settings or arguments: one line, as %timeit's
        raise UsageError(str(exc)) from None


@magics_class
class JitbenchMagics(Magics):
    """`%jitbench` and `%%jitbench`."""

    @needs_local_scope
    @line_magic("jitbench")  # type: ignore[arg-type]  # IPython types these as Never
    def jitbench_line(self, line: str, local_ns: dict[str, Any] | None = None) -> BenchResult:
        """Measure one call in NumPy, JAX eager and JAX jit: ``%jitbench f(x)``.

        Options: -m MODES, -b SECONDS, -p PROCESSES, --x64, --numpy NAME, --static
        NAMES, --static-argnums N,M, --eager CHOICE, --name NAME (see
        `jitbench.interactive.magics`). Returns the BenchResult.
        """
        assert self.shell is not None
        return run_magic(line, self.shell.user_ns, local_ns)

    @cell_magic("jitbench")  # type: ignore[arg-type]
    def jitbench_cell(self, line: str, cell: str) -> BenchResult:
        """``%%jitbench [options]``: the cell's lines before its last run first (in the
        user's namespace); the last line is the call measured."""
        assert self.shell is not None
        source = self.shell.transform_cell(cell)
        try:
            module = ast.parse(source)
        except SyntaxError as exc:
            raise UsageError(f"%%jitbench: the cell does not parse: {exc}") from None
        if not module.body:
            raise UsageError("%%jitbench: the cell's last line is the call to measure, f(x)")
        last = module.body[-1]
        if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)):
            raise UsageError("%%jitbench: the cell's last line must be the call to measure, f(x)")
        setup = ast.Module(body=module.body[:-1], type_ignores=[])
        if setup.body:
            exec(compile(setup, "<jitbench setup>", "exec"), self.shell.user_ns)
        return run_magic(f"{line} {ast.unparse(last.value)}", self.shell.user_ns)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jitbench`: register the magics."""
    ipython.register_magics(JitbenchMagics)


__all__ = ["JitbenchMagics", "load_ipython_extension", "run_magic"]

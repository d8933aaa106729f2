"""The two sides of an interleaved comparison: a git revision checked out in a worktree of
its own, the working tree, or another Python environment, each made a `duet.Side`.

What a side contributes is its code, not jitbench's: the running jitbench package is
copied once into a harness folder that goes first on every side's path (`duet.harness_path`),
then the side's tree, so a revision's suites and the packages its tree holds are measured
with this jitbench's protocol. Suite paths are taken relative to the repository's top, so
`suites/` means the revision's own `suites/`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from jitbench.ab.duet import Side, harness_path
from jitbench.errors import ConfigError
from jitbench.runner.signals import signals_ignored
from jitbench.suite.discovery import default_roots


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise ConfigError(
            f"git {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout.strip()


#: What measures revisions, and what else it could measure, as each command names them.
_AB_NEEDS = ("--rev", "compare two environments with --python-base/--python-new")
_BISECT_NEEDS = ("bisect", "compare two environments with `jitbench ab --python-base/--python-new`")


def repository_top(cwd: Path, needs: tuple[str, str] = _AB_NEEDS) -> Path:
    """The top of the git repository holding `cwd`.

    Raises:
        ConfigError: `cwd` is not in a git repository (or git is missing); the message
            names `needs`: what asked for one, and what to do instead.
    """
    try:
        return Path(_git(cwd, "rev-parse", "--show-toplevel"))
    except (ConfigError, OSError):
        what, instead = needs
        raise ConfigError(
            f"{what} needs a git repository, and {str(cwd)!r} is not in one; run from your "
            f"project's checkout, or {instead}."
        ) from None


def resolve_revision(top: Path, rev: str, what: str = "--rev") -> str:
    """The commit `rev` names (a branch, tag, sha or expression such as HEAD~1).

    Raises:
        ConfigError: no such revision.
    """
    try:
        return _git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except ConfigError:
        raise ConfigError(
            f"{what} {rev!r} names no commit in {top}; pass a branch, tag or commit "
            "(git log --oneline shows them), and fetch it first in a shallow CI clone."
        ) from None


def add_worktree(top: Path, commit: str, into: Path) -> Path:
    """Check `commit` out (detached) into the new folder `into`; `remove_worktree` undoes it."""
    _git(top, "worktree", "add", "--detach", "--force", str(into), commit)
    return into


def remove_worktree(top: Path, folder: Path) -> None:
    """Remove a worktree made by `add_worktree` (quietly: it is a clean-up)."""
    subprocess.run(
        ["git", "-C", str(top), "worktree", "remove", "--force", str(folder)],
        capture_output=True,
        check=False,
    )


def remove_all(top: Path | None, trees: Sequence[Path], scratch: Path) -> None:
    """Remove `trees` (worktrees of the repository at `top`, some perhaps half made by a
    `git worktree add` a signal cut short), the `scratch` folder that holds them, and any
    registration left for a folder now gone (`git worktree prune`). A stop signal that
    arrives meanwhile waits for the end (`signals_ignored`): a clean-up cut short would
    leave worktrees registered in the user's repository. Prune runs only when one of
    ours is still registered (it would also drop the user's own stale entries)."""
    with signals_ignored():
        if top is not None:
            for tree in trees:
                remove_worktree(top, tree)
        shutil.rmtree(scratch, ignore_errors=True)
        if top is not None and trees and _registered_under(top, scratch):
            subprocess.run(
                ["git", "-C", str(top), "worktree", "prune"], capture_output=True, check=False
            )


def _registered_under(top: Path, folder: Path) -> bool:
    """Whether a worktree of the repository at `top` is registered under `folder`."""
    listed = subprocess.run(
        ["git", "-C", str(top), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    inside = (str(folder), str(folder.resolve()))
    paths = [
        line.removeprefix("worktree ") for line in listed.splitlines() if line[:9] == "worktree "
    ]
    return any(p == f or p.startswith(f + os.sep) for p in paths for f in inside)


def suite_paths_in(tree: Path, top: Path, suites: Sequence[str], cwd: Path) -> tuple[str, ...]:
    """The suite paths given on the command line (relative to `cwd`, inside the repository
    at `top`) as the same paths inside `tree` (another checkout of that repository)."""
    out = []
    for s in suites:
        path = (cwd / s).resolve()
        try:
            rel = path.relative_to(top.resolve())
        except ValueError:
            raise ConfigError(
                f"suite path {s!r} is outside the repository {top}; with --rev every suite "
                "must be part of the repository, so that each revision has its own."
            ) from None
        out.append(str(tree / rel))
    return tuple(out)


def tree_path(tree: Path) -> tuple[str, ...]:
    """What of a checkout goes on a side's path: its top, and `src/` for a src layout."""
    paths = [str(tree)]
    if (tree / "src").is_dir():
        paths.append(str(tree / "src"))
    return tuple(paths)


def revision_side(
    name: str,
    *,
    top: Path,
    tree: Path,
    label: str,
    harness: Path,
    suites: Sequence[str],
    cwd: Path,
    python: str | None = None,
) -> Side:
    """A side that measures the checkout `tree` of the repository at `top` (with another
    Python than this one where `python` names it)."""
    return Side(
        name=name,
        label=label,
        python=python or sys.executable,
        path=(str(harness), *tree_path(tree)),
        suites=suite_paths_in(tree, top, suites, cwd),
        cwd=str(tree),
    )


def environment_side(
    name: str, *, python: str, harness: Path, suites: Sequence[str], cwd: Path
) -> Side:
    """A side that measures the current tree with another Python (a virtualenv's)."""
    exe = Path(python)
    if not exe.exists():
        raise ConfigError(
            f"--python-{name} {python!r} does not exist; pass the path of a Python executable "
            "(e.g. venv/bin/python) whose environment has jitbench's dependencies."
        )
    return Side(
        name=name,
        label=f"{python}",
        python=str(exe),
        path=(str(harness), str(cwd)),
        suites=tuple(str((cwd / s).resolve()) for s in suites),
        cwd=str(cwd),
    )


@contextlib.contextmanager
def comparison_sides(
    *,
    rev: str | None,
    rev_new: str | None,
    python_base: str | None,
    python_new: str | None,
    suites: Sequence[str],
    cwd: Path,
) -> Iterator[tuple[Side, Side]]:
    """The (base, new) sides the options name, ready to measure; worktrees and the
    harness copy are removed afterwards.

    `rev` (and `rev_new`, default the working tree as it is, uncommitted changes included)
    compare two revisions; `python_base`/`python_new` compare two environments on the
    working tree. Both at once is refused.

    Raises:
        ConfigError: no side named, both kinds at once, not a git repository, an unknown
            revision, a missing Python, or a suite outside the repository.
    """
    by_rev = rev is not None or rev_new is not None
    by_python = python_base is not None or python_new is not None
    if by_rev and by_python:
        raise ConfigError(
            "compare two revisions (--rev, --rev-new) or two environments (--python-base, "
            "--python-new), not both at once."
        )
    if by_rev and rev is None:
        raise ConfigError("--rev-new needs --rev BASE: the revision to compare it against.")
    if not suites:
        # Two revisions: each one's own ./suites. Two environments: the suite `run` would
        # take here (./suites, else the default suite installed with jitbench).
        suites = [str(p) for p in default_roots()] if by_python else ["suites"]
    scratch = Path(tempfile.mkdtemp(prefix="jitbench-compare-"))
    top: Path | None = None
    made: list[Path] = []
    try:
        harness = harness_path(scratch / "harness")
        if by_python:
            exe = sys.executable
            yield (
                environment_side(
                    "base", python=python_base or exe, harness=harness, suites=suites, cwd=cwd
                ),
                environment_side(
                    "new", python=python_new or exe, harness=harness, suites=suites, cwd=cwd
                ),
            )
            return
        assert rev is not None
        top = repository_top(cwd)

        def checkout(name: str, revision: str) -> Side:
            """A side for `revision`, checked out in a worktree of its own."""
            assert top is not None
            commit = resolve_revision(top, revision)
            made.append(scratch / name)  # before: a signal may cut `git worktree add` short
            add_worktree(top, commit, made[-1])
            label = f"{revision} ({commit[:10]})"
            return revision_side(
                name, top=top, tree=made[-1], label=label, harness=harness, suites=suites, cwd=cwd
            )

        base = checkout("base", rev)
        if rev_new is None:
            head = _git(top, "rev-parse", "HEAD")
            dirty = bool(_git(top, "status", "--porcelain", "--untracked-files=no"))
            label = f"working tree ({head[:10]}{' + changes' if dirty else ''})"
            new = revision_side(
                "new", top=top, tree=top, label=label, harness=harness, suites=suites, cwd=cwd
            )
        else:
            new = checkout("new", rev_new)
        yield base, new
    finally:
        remove_all(top, made, scratch)


def python_executable(python: str, option: str) -> str:
    """`python` if it exists.

    Raises:
        ConfigError: it does not, naming `option`.
    """
    if not Path(python).exists():
        found = shutil.which(python) if os.sep not in python else None
        if found is not None:  # a name on PATH, such as python3.12
            return found
        raise ConfigError(
            f"{option} {python!r} does not exist; pass the path of a Python executable "
            "(e.g. venv/bin/python) whose environment has jitbench's dependencies."
        )
    return python


def first_parent_range(top: Path, good: str, bad: str) -> list[tuple[str, str]]:
    """The first-parent commits after `good` up to `bad`, oldest first, as (sha, subject).

    Raises:
        ConfigError: `good` is not an ancestor of `bad` (nothing to bisect between them).
    """
    ancestor = subprocess.run(
        ["git", "-C", str(top), "merge-base", "--is-ancestor", good, bad],
        capture_output=True,
        check=False,
    )
    if ancestor.returncode != 0 or good == bad:
        raise ConfigError(
            f"GOOD ({good[:10]}) is not an older ancestor of BAD ({bad[:10]}); pass the "
            "older revision first (jitbench bisect GOOD BAD)."
        )
    text = _git(top, "log", "--first-parent", "--reverse", "--format=%H%x09%s", f"{good}..{bad}")
    commits = [tuple(line.split("\t", 1)) for line in text.splitlines() if line.strip()]
    return [(c[0], c[1] if len(c) > 1 else "") for c in commits]


class Checkouts:
    """Worktrees of one repository's commits, each made once and kept until `close`
    (a bisection measures GOOD, BAD and a midpoint again and again), and one harness
    copy that every side shares."""

    def __init__(self, cwd: Path, suites: Sequence[str]) -> None:
        self.cwd = cwd
        self.top = repository_top(cwd, _BISECT_NEEDS)
        self.suites = list(suites) or ["suites"]
        self._root = Path(tempfile.mkdtemp(prefix="jitbench-bisect-"))
        self._trees: dict[str, Path] = {}
        try:
            self.harness = harness_path(self._root / "harness")
        except BaseException:
            self.close()
            raise

    def resolve(self, rev: str, what: str) -> str:
        return resolve_revision(self.top, rev, what)

    def subject(self, commit: str) -> str:
        """The first line of `commit`'s message."""
        return _git(self.top, "log", "-1", "--format=%s", commit)

    def side(self, name: str, commit: str, label: str, python: str | None = None) -> Side:
        """A side measuring `commit` (its worktree made on first use)."""
        tree = self._trees.get(commit)
        if tree is None:
            tree = self._root / commit[:12]
            self._trees[commit] = tree  # before: a signal may cut `git worktree add` short
            add_worktree(self.top, commit, tree)
        return revision_side(
            name,
            top=self.top,
            tree=tree,
            label=label,
            harness=self.harness,
            suites=self.suites,
            cwd=self.cwd,
            python=python,
        )

    def close(self) -> None:
        remove_all(self.top, list(self._trees.values()), self._root)
        self._trees.clear()

    def __enter__(self) -> Checkouts:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

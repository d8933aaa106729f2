"""`pip install .` and then `jitbench run --quick` in an empty folder: the default suite
travels with the package (issue 20).

A real install of this checkout into a throwaway virtual environment (its dependencies come
from the test environment through a .pth file, so nothing else is downloaded or built), then
the installed `jitbench` script in an empty folder, with no PYTHONPATH pointing back here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]


def _checkout_copy(dest: Path) -> Path:
    """This checkout's files (tracked and new, not ignored ones) copied to `dest`."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: nothing to copy for the install")
    src = dest / "src"
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, src / name)
    return src


def test_pip_install_then_run_quick_in_an_empty_folder(tmp_path: Path) -> None:
    src = _checkout_copy(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The test environment's packages (jax, numpy, pip, …) for the new environment.
    Path(purelib, "_test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COLUMNS")}
    env["JAX_PLATFORMS"] = "cpu"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--ignore-installed", str(src)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if install.returncode != 0 and "setuptools" in install.stderr and "satisf" in install.stderr:
        pytest.skip(f"pip cannot fetch the build backend here: {install.stderr[-300:]}")
    assert install.returncode == 0, install.stdout + install.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    jitbench = venv / "bin" / "jitbench"
    where = subprocess.run(
        [str(python), "-c", "import jitbench; print(jitbench.__file__)"],
        cwd=empty,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), where  # the installed copy, not this checkout
    listed = subprocess.run(
        [str(jitbench), "list", "--json"], cwd=empty, capture_output=True, text=True, env=env
    )
    assert listed.returncode == 0, listed.stderr
    assert '"selu"' in listed.stdout and str(venv) in listed.stdout  # found where installed
    run = subprocess.run(
        [str(jitbench), "run", "--quick", "selu", "gelu", "--out", "out"],
        cwd=empty,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "selu S" in run.stdout and "gelu S" in run.stdout
    assert list((empty / "out" / "runs").glob("*.json"))
    assert not (empty / "suites").exists()

"""Discovery of suite files by path, broken files, selection by name and -k."""

from __future__ import annotations

import pytest

from jitbench import SuiteError, discover

GOOD = """
from jitbench import workload
def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)
@workload(inputs=vec, sizes={"S": {"n": 4}}, tags=("fast", "elementwise"))
def alpha(xp, x):
    return x + 1
@workload(inputs=vec, sizes={"S": {"n": 4}}, tags=("slow",))
def beta(xp, x):
    return x * 2
"""


@pytest.fixture
def suite_dir(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "_helper.py").write_text("raise RuntimeError('never imported')\n")
    return tmp_path


def test_discovers_folder_skipping_underscore_files(suite_dir):
    reg = discover([suite_dir])
    assert list(reg.workloads) == ["alpha", "beta"]
    assert reg.errors == []


def test_broken_file_is_reported_with_line_and_others_still_load(suite_dir):
    (suite_dir / "broken.py").write_text("x = 1\ndef f(:\n    pass\n")
    (suite_dir / "raises.py").write_text("import math\n\nraise ValueError('bad suite')\n")
    reg = discover([suite_dir])
    assert set(reg.workloads) == {"alpha", "beta"}
    by_file = {e.path.rsplit("/", 1)[-1]: e for e in reg.errors}
    assert by_file["broken.py"].exc_type == "SyntaxError" and by_file["broken.py"].line == 2
    assert by_file["raises.py"].exc_type == "ValueError" and by_file["raises.py"].line == 3
    assert "raises.py:3: ValueError: bad suite" in str(by_file["raises.py"])


def test_an_unknown_name_points_at_the_files_that_did_not_import(suite_dir):
    with pytest.raises(SuiteError, match=r"^unknown workload 'lost'") as caught:
        discover([suite_dir]).get("lost")
    assert "did not import" not in str(caught.value)
    (suite_dir / "broken.py").write_text("x = 1\ndef f(:\n    pass\n")
    (suite_dir / "raises.py").write_text("raise ValueError('bad suite')\n")
    with pytest.raises(SuiteError) as caught:
        discover([suite_dir]).get("lost")
    assert "It may be in broken.py or raises.py, which did not import" in str(caught.value)


def test_a_file_that_is_not_python_is_refused_as_such(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not code")
    with pytest.raises(SuiteError, match="is not a Python file"):
        discover([notes])


def test_collect_false_files_load_only_when_named(suite_dir):
    extra = suite_dir / "extra.py"
    extra.write_text(
        GOOD.replace("alpha", "gamma").replace("beta", "delta") + "\n__jitbench_collect__ = False\n"
    )
    assert "gamma" not in discover([suite_dir]).workloads
    assert set(discover([extra]).workloads) == {"gamma", "delta"}


def test_missing_path_is_a_suite_error(tmp_path):
    with pytest.raises(SuiteError, match="does not exist"):
        discover([tmp_path / "nope"])


def test_duplicate_names_are_reported(suite_dir):
    (suite_dir / "zdup.py").write_text(GOOD)
    reg = discover([suite_dir])
    assert any("duplicate workload name 'alpha'" in e.message for e in reg.errors)


def test_unknown_name_suggests_close_match(suite_dir):
    reg = discover([suite_dir])
    with pytest.raises(SuiteError, match="did you mean 'alpha'"):
        reg.get("alpah")


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("fast", ["alpha"]),
        ("not fast", ["beta"]),
        ("alpha or slow", ["alpha", "beta"]),
        ("elementwise and not beta", ["alpha"]),
        ("(slow)", ["beta"]),
        ("lph", ["alpha"]),
    ],
)
def test_keyword_expressions(suite_dir, expr, expected):
    assert [w.name for w in discover([suite_dir]).select(keyword=expr)] == expected


def test_bad_keyword_expression(suite_dir):
    with pytest.raises(SuiteError, match="invalid -k expression"):
        discover([suite_dir]).select(keyword="fast and")


def test_a_name_given_twice_is_selected_once(suite_dir):
    # Twice on the command line (`jitbench run alpha alpha`) used to plan its cases twice,
    # and the run file then held duplicate measurements.
    reg = discover([suite_dir])
    assert [w.name for w in reg.select(["alpha", "beta", "alpha"])] == ["alpha", "beta"]


def test_without_a_suites_folder_the_installed_default_suite_is_found(tmp_path, monkeypatch):
    from jitbench.suite.discovery import default_roots, default_suite_path

    installed = default_suite_path()
    assert installed is not None and (installed / "elementwise.py").is_file()
    monkeypatch.chdir(tmp_path)  # no ./suites here
    assert default_roots() == [installed]
    registry = discover()
    assert {"selu", "gemm", "mandelbrot"} <= set(registry.workloads)
    assert "unrolled_loop" not in registry.workloads  # pitfalls stay out of the default run
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "mine.py").write_text(GOOD)
    assert set(discover().workloads) == {"alpha", "beta"}  # ./suites wins when present

"""The run page's case table, case details and CSV."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import replace
from pathlib import Path

from jitbench import formatting as fmt
from jitbench.report import table
from jitbench.results import Diagnostic, Mode, Run, Severity, load_run
from jitbench.results.analysis import analyse
from tests.report.builders import crafted_evil, seed_run


def test_one_row_per_case_with_the_terminals_columns(run: Run) -> None:
    rows = table.case_rows(run)
    assert [r.case for r in rows] == run.cases()
    heads = [c.head for c in table.case_columns(run)]
    assert heads == [
        "workload", "size", "NumPy", "eager", "jit", "eager ×", "jit ×", "jit compile",
        "break-even", "GFLOP/s", "H→D", "D→H", "notes",
    ]  # fmt: skip
    double = next(r for r in rows if r.case.workload == "double")
    key = double.case.key
    jit = run.get(key, Mode.JIT)
    shown = analyse(run).figure(key, Mode.JIT)
    assert jit is not None and shown is not None and shown.time is not None
    assert double.cells["jit"].text == fmt.seconds(shown.time.value)
    t = shown.time
    assert double.cells["jit"].sub == fmt.seconds_pm(t.value, t.low, t.high)
    assert f"{len(jit.samples_s)} samples, each timing" in double.cells["jit"].title  # explained
    r = shown.speedup
    assert r is not None and double.cells["jit_x"].text.startswith(fmt.ratio(r.value))
    assert double.cells["jit_x"].sub.startswith(fmt.interval(r.low, r.high))  # type: ignore[arg-type]
    assert double.cells["break_even"].text == fmt.count(analyse(run).break_even_calls(key))
    # transfer: the device_put the run recorded, time and bytes
    assert jit.transfer_s is not None
    assert double.cells["transfer"].text == fmt.seconds(jit.transfer_s)
    assert double.cells["transfer"].sub == fmt.bytes_(jit.transfer_bytes)
    # and the copy of jit's first output back to the host
    assert jit.transfer_back_s is not None and jit.transfer_back_bytes
    assert double.cells["transfer_back"].text == fmt.seconds(jit.transfer_back_s)
    assert double.cells["transfer_back"].sub == fmt.bytes_(jit.transfer_back_bytes)
    assert "jit's first output" in double.cells["transfer_back"].title
    broken = next(r for r in rows if r.case.workload == "value_branch")
    assert broken.failed and broken.cells["jit"].text == "error"
    assert "TracerBoolConversionError" in broken.cells["notes"].text


def test_noisy_is_said_once_not_on_every_row(run: Run) -> None:
    noisy = Diagnostic(code="noisy", severity=Severity.INFO, message="CI ±9 % > ±1 %")
    ms = tuple(replace(m, diagnostics=(*m.diagnostics, noisy)) for m in run.measurements)
    rows = table.case_rows(replace(run, measurements=ms))
    assert not any("noisy" in r.cells["notes"].text for r in rows)


def test_details_hold_every_mode_and_message(run: Run) -> None:
    details = {d.case.workload: d for d in table.case_details(run)}
    d = details["double"]
    assert d.modes == [Mode.NUMPY, Mode.EAGER, Mode.JIT]
    names = [name for name, _ in d.rows]
    for name in ("time / call", "95 % interval", "samples", "transfer (device_put)",
                 "transfer back (first output)", "trace / lower / compile",
                 "memory: peak"):  # fmt: skip
        assert name in names, name
    b = details["value_branch"]
    assert any(mode == "jit" and "TracerBoolConversionError" in text
               for mode, _, text, _ in b.messages)  # fmt: skip
    # A CPU run has no allocator peak: the row is left out, not shown as "—".
    assert "device memory peak (allocator)" not in names


def test_details_show_the_device_peak_and_mark_a_bound(run: Run) -> None:
    from dataclasses import replace

    def details(exact: bool) -> list[str]:
        # One peak per case and device, recorded on each of its JAX modes alike.
        gpu = replace(run, measurements=tuple(
            m if m.mode is Mode.NUMPY
            else replace(m, device_peak_bytes=5 << 20, device_peak_exact=exact)
            for m in run.measurements
        ))  # fmt: skip
        d = {x.case.workload: x for x in table.case_details(gpu)}["double"]
        return dict(d.rows)["device memory peak (allocator)"]

    assert details(True) == ["—", "5 MiB", "5 MiB"]  # numpy, eager, jit
    assert details(False) == ["—", "≤ 5 MiB", "≤ 5 MiB"]  # an earlier case's mark bounds it


def test_details_show_each_programs_metrics(run: Run) -> None:
    ops = {"parameter": 2, "constant": 3, "fusion": 2, "multiply": 4, "add": 1, "copy": 1}
    programmed = replace(run, measurements=tuple(
        replace(m, compile=replace(m.compile, hlo_opcodes=ops, code_bytes=12_288,
                                   program_fingerprint="f" * 16))
        if m.mode is Mode.JIT and m.compile is not None else m
        for m in run.measurements
    ))  # fmt: skip
    d = dict({x.case.workload: x for x in table.case_details(programmed)}["double"].rows)
    assert d["HLO instructions"][-1] == "13"
    assert d["top 5 opcodes"][-1] == "multiply 4 · fusion 2 · add 1 · copy 1"
    assert d["generated code"][-1] == "12 KiB" and d["program fingerprint"][-1] == "f" * 16
    assert d["fusions · custom calls"][-1] == "2 · 0"
    assert "collectives" not in d  # no sharded mode: the row is left out
    assert table.top_opcodes({"parameter": 1}) == "—"


EXAMPLES = Path(__file__).resolve().parents[2] / "reports" / "examples" / "runs"


def test_csv_has_every_measurement_and_defuses_formulas(run: Run) -> None:
    rows = list(csv.DictReader(io.StringIO(table.run_csv(run))))
    assert len(rows) == len(run.measurements)
    assert list(rows[0]) == list(table.CSV_FIELDS)
    first = run.measurements[0]
    assert rows[0]["workload"] == first.case.workload
    assert float(rows[0]["time_s"]) == analyse(run).time(first.case, first.mode).value  # type: ignore[union-attr]
    # A break-even that never comes is 'inf', as the terminal's CSV writes it, not empty
    # (the 2026-11-23 example run has 11 such cases).
    example = load_run(EXAMPLES / "20261123T064616Z-8ae277.json")
    never = {
        c.key for c in example.cases() if analyse(example).break_even_calls(c.key) == float("inf")
    }
    written = [
        r["break_even_calls"]
        for r in csv.DictReader(io.StringIO(table.run_csv(example)))
        if r["mode"] == "jit" and (r["workload"], r["size"], r["device"], r["dtype"]) in never
    ]
    assert len(written) == len(never) == 11 and set(written) == {"inf"}
    evil = crafted_evil(run)
    evil = replace(evil, measurements=tuple(
        replace(m, case=replace(m.case, workload="=HYPERLINK(1)")) for m in evil.measurements
    ))  # fmt: skip
    text = table.run_csv(evil)
    assert "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text
    assert "'=HYPERLINK(1)" in text


def test_size_sorts_by_preset_order() -> None:
    rows = table.case_rows(seed_run())
    keys = {r.case.size: r.cells["size"].sort for r in rows}
    assert keys["S"] < keys["M"]


def test_heatmap_is_log_coloured_around_one(run: Run) -> None:
    jit, eager = table.heatmaps(run)
    assert (jit.mode, eager.mode) == (Mode.JIT, Mode.EAGER)
    assert [name for name, _ in jit.rows] == ["double", "wrong_in_jit", "value_branch"]
    assert jit.columns == ["S"]  # presets only: the sweep has its own charts
    double = dict(jit.rows)["double"][0]
    f = analyse(run).figure(next(c for c in run.cases() if c.workload == "double"), Mode.JIT)
    assert f is not None and f.speedup is not None
    r = f.speedup
    assert double.text.startswith(fmt.ratio(r.value))
    if f.headline:
        assert double.background == table.heat_color(math.log10(r.value), jit.span)[0]
    else:  # too uncertain to headline: the neutral grey, marked
        assert double.background == table.UNCERTAIN_BACKGROUND and double.text != fmt.ratio(r.value)
    assert dict(jit.rows)["value_branch"][0].text == "✗"
    # a diverging scale: 1× is near white, slower red, faster blue; text stays readable
    assert table.heat_color(0.0, 1.0) == ("#f7f7f7", "#1d232b")
    assert table.heat_color(-1.0, 1.0) == ("#67001f", "#ffffff")
    assert table.heat_color(5.0, 1.0) == ("#053061", "#ffffff")
    assert [label for label, _, _ in jit.legend][len(jit.legend) // 2] == "1×"


def test_sharded_columns_show_the_mesh_the_scaling_and_the_efficiency() -> None:
    from pathlib import Path

    from jitbench.results import load_run

    fixtures = Path(__file__).resolve().parents[1] / "results" / "fixtures"
    run = load_run(fixtures / "run-schema-1.5.json")
    keys = [c.key for c in table.case_columns(run)]
    assert keys.index("jit") < keys.index("sharded") < keys.index("scaling")
    assert keys.index("scaling") < keys.index("efficiency")
    row = table.case_rows(run)[0]
    scaling = analyse(run).case(row.case.key).scaling
    assert scaling is not None
    assert row.cells["sharded"].sub.endswith("4 devices")
    assert row.cells["scaling"].sort == scaling.speedup.value
    assert row.cells["efficiency"].text == f"{scaling.speedup.value / 4:.0%}"
    # A run without sharded mode has none of these columns.
    plain = load_run(fixtures / "run-schema-1.4.json")
    assert not {"sharded", "scaling", "efficiency"} & {c.key for c in table.case_columns(plain)}


def test_sweep_points_do_not_stretch_the_heatmaps_colour_scale() -> None:
    from jitbench.suite.workload import sweep_label

    run = seed_run()
    params = {"n": 1000}
    sweep = tuple(
        replace(
            m,
            case=replace(m.case, size=sweep_label(params), params=params),
            # a 10,000x jit win at a sweep size the heatmap does not show
            samples_s=tuple(s / 1e4 for s in m.samples_s) if m.mode is Mode.JIT else m.samples_s,
        )
        for m in run.measurements
        if m.case.size == "S"
    )
    with_sweep = replace(run, measurements=(*run.measurements, *sweep))
    assert [h.legend for h in table.heatmaps(with_sweep)] == [h.legend for h in table.heatmaps(run)]


ROOT = Path(__file__).resolve().parents[2]


def test_the_host_device_split_column_names_the_setting_that_makes_it() -> None:
    """The page's `time_split` columns name what `run` takes for them now, and no page
    kept in reports/examples names an option `run` no longer takes (the H200 pages said
    '(--time-split)' after the option became `--setting time_split=true`); `jitbench
    report reports/examples` renders them again."""
    from jitbench.cli.common import RETIRED_OPTIONS

    example = load_run(ROOT / "reports" / "examples" / "runs" / "20261126T044455Z-f00e30.json")
    titles = [c.title for c in table.case_columns(example) if c.key.endswith("_split")]
    assert titles and all("(--setting time_split=true)" in t for t in titles)
    retired = set(RETIRED_OPTIONS["run"])
    pages = sorted((ROOT / "reports" / "examples").rglob("*.html"))
    assert pages
    for page in pages:
        named = set(re.findall(r"--[a-z][a-z0-9-]*", page.read_text("utf-8")))
        assert not named & retired, (page.name, named & retired)

"""Acceptance check of the regression gate with real runs of the default suite.

For each of N rounds it measures, as real `python -m jitbench run` subprocesses:

    A  the default suite                      (base)
    S  the same suite with one workload doing FACTOR× the work under the same case key
    B  the default suite again                (base)

then `jitbench compare A B` (A/A: must report no regression, exit 0) and
`jitbench compare A S` (must report a regression, exit 1, the markdown naming the slowed
workload, and no other workload). The slowdown is real work: the suite file is copied and
one numeric size parameter of the workload (default jacobi2d's `steps`, the iteration count
of its loop) is multiplied by FACTOR for every size preset.

By default each side is four runs in rotating order (A S B, S B A, B A S, A S B), pooled
by `jitbench compare`, which then tests run time run by run; `--rounds 10` spreads every
case's samples over its run. This is the configuration the docs recommend for a gate on a
shared machine (docs: guide, "Gating CI"; results: validation, "Gate power, stored runs").

Usage (from the repository root):

    python tools/gate_check.py --rounds 5 --out /tmp/gate_check
    python tools/gate_check.py --pool 1 ...       # one run per side
    python tools/gate_check.py --run-args "-s S --budget 0.5" ...   # samples in one window
    python tools/gate_check.py --concurrent ...   # A, S and B measured at the same time

It prints one line per comparison and a summary, writes summary.json under --out, records
the machine's CPU pressure (load) around each round, and exits 0 when the acceptance holds
(no A/A regression, every slowdown caught with exit 1 and named in the markdown).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_load() -> str:
    """Load average and, where the kernel has it, the CPU pressure of the last 10 s."""
    parts = []
    with contextlib.suppress(OSError):
        parts.append("load " + Path("/proc/loadavg").read_text().split()[0])
    try:
        some = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        found = re.search(r"avg10=([\d.]+)", some)
        if found:
            parts.append(f"cpu-pressure {found.group(1)}%")
    except (OSError, AttributeError, IndexError):
        pass
    return ", ".join(parts) or "unknown"


def make_slow_suite(src: Path, dst: Path, workload: str, param: str, factor: float) -> Path:
    """Copy the suite folder and make `workload` do `factor`× the work under the same key."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    pattern = re.compile(rf"^def {re.escape(workload)}\(", re.M)
    target = next((p for p in sorted(dst.glob("*.py")) if pattern.search(p.read_text())), None)
    if target is None:
        raise SystemExit(f"no suite file in {src} defines workload {workload!r}")
    target.write_text(
        target.read_text()
        + f"""

# Injected by tools/gate_check.py: {workload} does {factor}x the work under the same case
# key (workload, size, device, dtype) by scaling its {param!r} size parameter.
import dataclasses as _gate_dc

{workload} = _gate_dc.replace(
    {workload},
    sizes={{
        _k: {{**_v, {param!r}: type(_v[{param!r}])(round(_v[{param!r}] * {factor!r}))}}
        for _k, _v in {workload}.sizes.items()
    }},
)
"""
    )
    return dst


def jitbench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
    }


def measure(jobs: list[tuple[Path, Path]], run_args: list[str], *, concurrent: bool) -> list[Path]:
    """Run `jitbench run --suite SUITE --out OUT RUN_ARGS` for each job, one after the other
    or all at once; return the --out folders in job order."""

    def start(suite: Path, out: Path) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jitbench",
                "run",
                "--suite",
                str(suite),
                "--out",
                str(out),
                *run_args,
            ],
            cwd=REPO,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(p: subprocess.Popen[str]) -> None:
        _, stderr = p.communicate(timeout=900)
        if p.returncode != 0:
            raise SystemExit(f"jitbench run failed ({p.returncode}):\n{stderr[-3000:]}")

    if concurrent:
        procs = [start(s, o) for s, o in jobs]
        for p in procs:
            finish(p)
    else:
        for s, o in jobs:
            finish(start(s, o))
    return [out for _, out in jobs]


def compare(base: Path, new: Path, out: Path, tag: str, cmp_args: list[str]) -> dict:
    md, js = out / f"{tag}.md", out / f"{tag}.json"
    proc = jitbench(
        "compare", str(base), str(new), "--markdown", str(md), "--json", str(js), *cmp_args
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"jitbench compare failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(js.read_text())
    return {"exit": proc.returncode, "data": data, "markdown": md.read_text(), "md_path": str(md)}


def describe(entries: list[dict], workload: str) -> str:
    rows = [e for e in entries if e["workload"] == workload]
    out = []
    for e in rows:
        ratio = f"{e['ratio']:.2f}x" if e["ratio"] is not None else "-"
        p = f"p={e['p_value']:.1g}" if e["p_value"] is not None else ""
        out.append(f"{e['mode']} {ratio} {p} {e['verdict']}")
    return "; ".join(out)


def worst(entries: list[dict]) -> str:
    timed = [e for e in entries if e["ratio"] is not None]
    if not timed:
        return "-"
    e = max(timed, key=lambda x: x["ratio"])
    return f"{e['workload']} {e['mode']} {e['ratio']:.2f}x p={e['p_value']:.1g} {e['verdict']}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--run-args",
        default="-s S --budget 0.5 --rounds 10",
        help="`jitbench run` options for every run (default: %(default)s)",
    )
    ap.add_argument("--inject", default="jacobi2d:steps", help="WORKLOAD:PARAM to scale")
    ap.add_argument("--factor", type=float, default=1.3)
    ap.add_argument("--suite", type=Path, default=REPO / "suites")
    ap.add_argument("--out", type=Path, default=Path("/tmp/jitbench_gate_check"))
    ap.add_argument("--compare-args", default="", help="extra `jitbench compare` options")
    ap.add_argument(
        "--concurrent",
        action="store_true",
        help="measure A, S and B at the same time, so machine drift hits all alike",
    )
    ap.add_argument(
        "--pool",
        type=int,
        default=4,
        help="runs per side in each round, in rotating order, pooled by compare",
    )
    ap.add_argument(
        "--no-warmup",
        dest="warmup",
        action="store_false",
        help="skip the throwaway `jitbench run --quick` before the first round",
    )
    ap.add_argument(
        "--per-workload",
        action="store_true",
        help="one process per workload and side (A, S, B of one workload together)",
    )
    args = ap.parse_args()

    workload, param = args.inject.split(":")
    args.out.mkdir(parents=True, exist_ok=True)
    slow_suite = make_slow_suite(args.suite, args.out / "suite_slow", workload, param, args.factor)
    run_args = args.run_args.split()
    cmp_args = args.compare_args.split()
    listing = jitbench("list", "--suite", str(args.suite), "--json")
    workloads = [w["name"] for w in json.loads(listing.stdout)]
    print(
        f"run options: {' '.join(run_args)}; compare options: {' '.join(cmp_args) or '-'}; "
        f"injected: {workload} {param} x{args.factor}; "
        f"{'concurrent' if args.concurrent else 'sequential'} runs A, S, B"
        f"{', one process per workload' if args.per_workload else ''}"
        f"{f', {args.pool} runs per side in rotating order, pooled' if args.pool > 1 else ''}"
    )

    if args.warmup:
        # In a check when this was written, the first run came out slower across the whole
        # suite than the five after it; a throwaway run takes such a start.
        measure([(args.suite, args.out / "warmup")], ["--quick"], concurrent=False)
        print(f"warm-up run done ({cpu_load()})")

    results = []
    for r in range(1, args.rounds + 1):
        t0 = time.time()
        load_before = cpu_load()
        rdir = args.out / f"round{r}"
        if rdir.exists():
            shutil.rmtree(rdir)
        # One process per side, or with --per-workload one per side and workload; the
        # --out folders then hold several runs, which `jitbench compare` pools.
        # With --pool K, each side is K runs in rotating order, pooled by `jitbench compare`
        # (what the CI workflow does with its runs).
        sides = [(args.suite, rdir / "a"), (slow_suite, rdir / "slow"), (args.suite, rdir / "b")]
        for k in range(args.pool):
            # Rotate the order each pass (A S B, S B A, B A S, ...): no side keeps a slot,
            # and no two runs of one side are back to back, where a slow minute of the
            # machine would hit both and pass for a difference between sides.
            jobs = sides[k % 3 :] + sides[: k % 3]
            for names in [[w] for w in workloads] if args.per_workload else [[]]:
                measure(jobs, [*run_args, *names], concurrent=args.concurrent)
        a, s, b = rdir / "a", rdir / "slow", rdir / "b"
        load_after = cpu_load()
        aa = compare(a, b, args.out, f"round{r}-aa", cmp_args)
        sl = compare(a, s, args.out, f"round{r}-slow", cmp_args)
        head = sl["markdown"].splitlines()[0]
        slow_regressed = sl["data"]["regressed_workloads"]
        res = {
            "round": r,
            "load": f"{load_before} -> {load_after}",
            "seconds": round(time.time() - t0, 1),
            "aa_exit": aa["exit"],
            "aa_regressed": aa["data"]["regressed_workloads"],
            "aa_counts": {k: v for k, v in aa["data"]["counts"].items() if v},
            "aa_compile_regressions": aa["data"]["compile_regressions"],
            "aa_worst": worst(aa["data"]["entries"]),
            "slow_exit": sl["exit"],
            "slow_regressed": slow_regressed,
            # Caught means a run-time regression row of the slowed workload (the injected
            # change is run-time work; a compile-time flag alone would be luck).
            "slow_timing_regressed": any(
                e["workload"] == workload and e["verdict"] == "regression"
                for e in sl["data"]["entries"]
            ),
            "slow_named_in_markdown": workload in head,
            "slow_injected": describe(sl["data"]["entries"], workload),
            "slow_others_regressed": [w for w in slow_regressed if w != workload],
            "markdown_head": head,
        }
        results.append(res)
        print(f"round {r} ({res['seconds']} s; {res['load']})")
        print(
            f"  A/A : exit {res['aa_exit']}, regressed {res['aa_regressed'] or 'none'}, "
            f"{res['aa_counts']}, compile regressions {res['aa_compile_regressions']}, "
            f"worst {res['aa_worst']}"
        )
        print(
            f"  slow: exit {res['slow_exit']}, regressed {slow_regressed or 'none'}, "
            f"{workload}: {res['slow_injected']}"
        )
        print(f"        markdown: {head}")
        sys.stdout.flush()

    n = len(results)
    aa_clean = sum(1 for x in results if x["aa_exit"] == 0)
    caught = sum(
        1
        for x in results
        if x["slow_exit"] == 1 and x["slow_timing_regressed"] and x["slow_named_in_markdown"]
    )
    only = sum(1 for x in results if not x["slow_others_regressed"])
    print(f"A/A pairs without a regression: {aa_clean}/{n}")
    print(
        f"slowdown ({workload} x{args.factor}) caught as a run-time regression, exit 1, "
        f"named: {caught}/{n}"
    )
    print(f"slowdown pairs with no other workload flagged: {only}/{n}")
    (args.out / "summary.json").write_text(
        json.dumps(
            {
                "run_args": run_args,
                "compare_args": cmp_args,
                "inject": args.inject,
                "concurrent": args.concurrent,
                "per_workload": args.per_workload,
                "pool": args.pool,
                "warmup": args.warmup,
                "factor": args.factor,
                "rounds": results,
                "aa_clean": aa_clean,
                "caught": caught,
            },
            indent=1,
        )
    )
    return 0 if aa_clean == n and caught == n else 1


if __name__ == "__main__":
    sys.exit(main())

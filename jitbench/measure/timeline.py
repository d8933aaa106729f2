"""Where the time of a call goes: host-side dispatch vs device execution, from JAX's own
profiler trace (`jax.profiler`).

A few calls of a ready mode are run under `jax.profiler.trace`, each inside a
`TraceAnnotation`, with the Python tracer off (it would slow every Python frame down and
inflate the host figure). From the trace (the `*.trace.json.gz` the profiler writes, in
Chrome trace format), per call:

- **wall**: the annotation's duration (the call, blocking on its output);
- **host**: from the call's start to the end of the last dispatch event on the calling
  thread (`PjitFunction(...)`, an executable's `Execute…`): how long the host took to hand
  every program to the device. Eager's op-by-op dispatch is this; so is jit's argument
  handling;
- **device**: the union of the busy intervals of the device's threads inside the call
  (XLA's CPU client and Eigen threads on a CPU, the `/device:…` streams on a GPU).

`wall − max(host, device)` is time neither was busy (waiting, synchronisation). Dispatch
and execution overlap under asynchronous dispatch, so host + device can exceed wall.
"""

from __future__ import annotations

import gzip
import json
import statistics
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax

from jitbench.results import TimeSplit

ANNOTATION = "jitbench-call"
#: Calls of each JAX mode traced per case (`jitbench profile`, and `jitbench run` with
#: `--setting time_split=true`).
SPLIT_CALLS = 5
#: Calling-thread events that dispatch work (their end = the host is done with that step).
_DISPATCH_PREFIXES = ("PjitFunction", "CommonPjRtLoadedExecutable::Execute", "PjRtStreamExecutor")
#: Device-thread events that are bookkeeping or waiting, not execution.
_NOT_WORK = ("ThreadpoolListener", "wait for completion", "end: ")


def trace_calls(call: Callable[[], object], calls: int = 5) -> list[dict[str, Any]]:
    """Run `call` `calls` times under the profiler, each in an annotation, and return the
    trace's events. The call is run once more before, untraced (warm)."""
    call()
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory(prefix="jitbench-trace-") as tmp:
        with jax.profiler.trace(tmp, profiler_options=options):
            for _ in range(calls):
                with jax.profiler.TraceAnnotation(ANNOTATION):
                    call()
        files = sorted(Path(tmp).rglob("*.trace.json.gz"))
        if not files:
            raise RuntimeError("jax.profiler wrote no trace file")
        with gzip.open(files[-1], "rt", encoding="utf-8") as f:
            events: list[dict[str, Any]] = json.load(f).get("traceEvents", [])
    return events


def _union_length(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def split_from_events(events: Sequence[Mapping[str, Any]]) -> TimeSplit | None:
    """The median split of the annotated calls in a trace; None when it has none."""
    names: dict[tuple[Any, Any], str] = {}
    processes: dict[Any, str] = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        if e.get("name") == "thread_name":
            names[(e.get("pid"), e.get("tid"))] = str(e.get("args", {}).get("name", ""))
        elif e.get("name") == "process_name":
            processes[e.get("pid")] = str(e.get("args", {}).get("name", ""))
    spans = [e for e in events if e.get("ph") == "X" and "dur" in e]
    calls = sorted((e for e in spans if e.get("name") == ANNOTATION), key=lambda e: float(e["ts"]))
    if not calls:
        return None
    caller = (calls[0].get("pid"), calls[0].get("tid"))

    def on_device(e: Mapping[str, Any]) -> bool:
        key = (e.get("pid"), e.get("tid"))
        if key == caller or any(word in str(e.get("name", "")) for word in _NOT_WORK):
            return False
        thread, process = names.get(key, ""), processes.get(e.get("pid"), "")
        return process.startswith("/device:") or thread.startswith(("tf_XLA", "XLA"))

    walls, hosts, devices = [], [], []
    for c in calls:
        start, end = float(c["ts"]), float(c["ts"]) + float(c["dur"])
        inside = [e for e in spans if start <= float(e["ts"]) < end]
        dispatch_ends = [
            float(e["ts"]) + float(e["dur"])
            for e in inside
            if (e.get("pid"), e.get("tid")) == caller
            and str(e.get("name", "")).startswith(_DISPATCH_PREFIXES)
        ]
        busy = [
            (float(e["ts"]), min(end, float(e["ts"]) + float(e["dur"])))
            for e in inside
            if on_device(e)
        ]
        walls.append(end - start)
        hosts.append((max(dispatch_ends) - start) if dispatch_ends else end - start)
        devices.append(_union_length(busy))
    us = 1e-6  # trace times are microseconds
    return TimeSplit(
        calls=len(calls),
        wall_s=statistics.median(walls) * us,
        host_s=statistics.median(hosts) * us,
        device_s=statistics.median(devices) * us,
    )


def time_split(call: Callable[[], object], calls: int = 5) -> TimeSplit | None:
    """Trace `calls` calls of `call` and split their time (see the module docstring)."""
    return split_from_events(trace_calls(call, calls))

"""What a worker does as one side of an interleaved comparison (`jitbench ab`): it opens
cases and takes a round of samples on request, so that the parent can alternate two such
workers (base and new code) round by round, in the same minute, on the same core.

The side's worker is the run's one worker (`runner.worker`), started in the side's Python
with the side's code on its path (`worker.Command`) and ordered to `serve`. Requests come
on its channel as `(op, fields)`, each answered `("answer", {"ok": True, ...})` or
`("answer", {"ok": False, "error": "one line"})`:

- `init`: config (RunConfig dict), suites (paths), cores, cwd, layout_offset (bytes held
  from the start, see `duet.layout_offsets`) → workloads (sizes, tags), suite errors, the
  environment, the layout offset.
- `open`: id, workload, size, dtype → each mode's calls per sample.
- `round`: id, calls ({mode: calls}) → a sample of each mode in that order, {mode: seconds
  per call or None}.
- `compile`: id → the cold jit compile's seconds, measured again (None when it cannot be).
- `finish`: id → the case's measurements as run-file dicts and its programs' texts by
  mode (`CompileInfo.program_text`); the case is closed.
- `quit`.
"""

from __future__ import annotations

import contextlib
import os
from multiprocessing.connection import Connection
from typing import Any


class _Worker:
    def __init__(self) -> None:
        self.registry: Any = None
        self.config: Any = None
        self.device: Any = None
        self.sessions: dict[int, Any] = {}
        self.stack = contextlib.ExitStack()
        self.layout_block = bytearray()  # held for the worker's life (`duet.layout_offsets`)

    def init(self, req: dict[str, Any]) -> dict[str, Any]:
        from jitbench.config import RunConfig
        from jitbench.measure import devices, environment
        from jitbench.measure.threads import limited_threads
        from jitbench.runner.warmup import warm_up
        from jitbench.suite import discovery

        # First, so that everything allocated after it (suites, inputs) lands past it.
        self.layout_block = bytearray(int(req.get("layout_offset", 0)))
        self.config = RunConfig.from_dict(req["config"])
        if req.get("cwd"):
            os.chdir(req["cwd"])
        cores = set(req.get("cores") or ()) or None
        self.registry = discovery.discover(req["suites"])
        if self.config.x64 is None:  # the suite's own float width (NPBench: float64)
            from jitbench.runner.plan import suite_float_width

            self.config, _ = suite_float_width(list(self.registry.workloads.values()), self.config)
        self.stack.enter_context(devices.x64_enabled(self.config.x64))
        state = self.stack.enter_context(limited_threads(self.config.threads, cores=cores))
        self.device = devices.resolve_devices(list(self.config.devices))[0]
        warm_up([self.device])
        workloads = {
            wl.name: {
                "sizes": list(wl.sizes),
                "tags": list(wl.tags),
            }
            for wl in self.registry.workloads.values()
        }
        return {
            "workloads": workloads,
            "suite_errors": [str(e) for e in self.registry.errors],
            "environment": environment.capture(threads=state),
            "device": devices.device_label(self.device),
            "layout_offset": len(self.layout_block),
            "x64": bool(self.config.x64),
        }

    def open(self, req: dict[str, Any]) -> dict[str, Any]:
        from jitbench.measure import opening

        wl = self.registry.get(req["workload"])
        params = dict(wl.sizes[req["size"]])
        pc = opening.PlannedCase(wl, req["size"], params, self.device, req["dtype"])
        session = opening.open_case(
            pc,
            timed=self.config.modes,
            plan=self.config.plan,
            seed=self.config.seed,
            quick=False,
        )
        self.sessions[int(req["id"])] = session
        return {"calls": {m.value: session.calls_per_sample(m) for m in self.config.modes}}

    def round(self, req: dict[str, Any]) -> dict[str, Any]:
        """One sample of each mode asked for, in order: {mode: seconds per call or None}."""
        from jitbench.results import Mode

        session = self.sessions[int(req["id"])]
        return {
            "s": {
                mode: session.time_sample(Mode(mode), int(calls))
                for mode, calls in req["calls"].items()
            }
        }

    def compile(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"s": self.sessions[int(req["id"])].compile_once()}

    def finish(self, req: dict[str, Any]) -> dict[str, Any]:
        from jitbench.results.codec import measurement_to_dict

        session = self.sessions.pop(int(req["id"]))
        measurements = session.measurements()
        return {
            "measurements": [measurement_to_dict(m) for m in measurements],
            # The programs' texts travel beside the run-file dicts, which leave them out.
            "programs": {
                m.mode.value: m.compile.program_text
                for m in measurements
                if m.compile is not None and m.compile.program_text
            },
        }


def serve(conn: Connection) -> None:
    """A worker's order as one side: answer the parent's requests until "quit" (or the
    parent goes)."""
    from jitbench.runner.forks import FORK_HINT, fork_error, forks_made, refuse_forks

    refuse_forks()  # a workload's bare os.fork(): its child ends at once
    worker = _Worker()
    handlers = {
        "init": worker.init,
        "open": worker.open,
        "round": worker.round,
        "compile": worker.compile,
        "finish": worker.finish,
    }
    with worker.stack:
        while True:
            try:
                op, req = conn.recv()
            except EOFError:
                return
            if op == "quit":
                return
            forks = forks_made()
            try:
                answer: dict[str, Any] = {"ok": True, **handlers[op](req)}
                if forks_made() != forks:
                    raise fork_error()
            except Exception as exc:  # the parent decides what a failure means
                hint = f" ({FORK_HINT})" if forks_made() != forks else ""
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}{hint}"[:2000]}
            conn.send(("answer", answer))

"""One side of an interleaved comparison (`jitbench ab`): a worker process that
opens cases and takes a round of samples on request, so that the parent can alternate two
such workers (base and new code) round by round, in the same minute, on the same core.

Started as `python -m jitbench.runner.duet_worker` by `jitbench.runner.duet`, with the
side's code first on its path. It reads one JSON request a line on stdin and answers one
JSON line on the descriptor that was its stdout; its own stdout is pointed at stderr first,
so a workload that prints cannot break the protocol. Requests (`op`):

- `init`: config (RunConfig dict), suites (paths), cores, cwd, layout_offset (bytes held
  from the start, see `duet.layout_offsets`) → workloads (sizes, tags), suite errors, the
  environment, the layout offset.
- `open`: id, workload, size, dtype → each mode's status and calls per sample.
- `round`: id, calls ({mode: calls}) → a sample of each mode in that order, {mode: seconds
  per call or null}.
- `compile`: id → the cold jit compile's seconds, measured again (null when it cannot be).
- `finish`: id → the case's measurements as run-file dicts and its programs' texts by
  mode (`CompileInfo.program_text`); the case is closed.
- `quit`.

An answer is `{"ok": true, ...}` or `{"ok": false, "error": "one line"}`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import IO, Any


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


@contextlib.contextmanager
def _protocol_channel() -> Iterator[IO[str]]:
    """The descriptor that was stdout, for answers; stdout itself then goes to stderr."""
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield channel
    finally:
        channel.close()


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (the parent keeps it stopped
    between requests, so it could not notice by itself); elsewhere, nothing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def main() -> int:
    from jitbench.runner.forks import FORK_HINT, fork_error, forks_made, refuse_forks

    _die_with_parent()
    refuse_forks()  # a workload's bare os.fork(): its child ends at once
    worker = _Worker()
    handlers = {
        "init": worker.init,
        "open": worker.open,
        "round": worker.round,
        "compile": worker.compile,
        "finish": worker.finish,
    }
    with _protocol_channel() as out, worker.stack:
        for line in sys.stdin:
            req = json.loads(line)
            op = req.get("op")
            if op == "quit":
                break
            forks = forks_made()
            try:
                answer: dict[str, Any] = {"ok": True, **handlers[op](req)}
                if forks_made() != forks:
                    raise fork_error()
            except Exception as exc:  # the parent decides what a failure means
                hint = f" ({FORK_HINT})" if forks_made() != forks else ""
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}{hint}"[:2000]}
            out.write(json.dumps(answer, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

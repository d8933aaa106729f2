"""What `jitbench run` shows while it measures: the runner's events, rendered.

On a terminal a progress bar (the current case's step and the time left, from
`runner.progress`); otherwise one plain line per finished case. Not a command: `cli.run`
imports it.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from jitbench import formatting as fmt
from jitbench.cli.common import err, escape, progress_console

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from jitbench.runner.events import RunEvent
    from jitbench.runner.progress import ProgressEstimate

#: Seconds between redraws of the progress bar (it is redrawn from the run's events, between
#: samples, never by a thread that could interrupt a timed sample).
REDRAW_S = 0.1


class RunProgress:
    """Renders runner events: on a terminal, a progress bar with the step of the current
    case and the time left (`runner.progress`); otherwise one plain line per finished case
    and nothing while a case runs.

    The bar writes to a duplicate of the terminal's stderr, so the workload's own output,
    captured at the file-descriptor level while it is measured (`measure.capture`), does
    not take the bar with it; the bar never redirects stdout or stderr itself.

    With `announce` (cases measured in this process), each case is named on stderr before
    it starts, so a crash that takes the process down (a segfault) says which case it was.
    """

    def __init__(self, *, announce: bool = False) -> None:
        from jitbench.runner.progress import ProgressEstimate

        self.announce = announce
        self.estimate: ProgressEstimate = ProgressEstimate()
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.suite_errors = 0
        self._drawn_at = 0.0
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> RunProgress:
        console = self._stack.enter_context(progress_console())
        if console is not None:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.fields[cases]}"),
                BarColumn(bar_width=20),
                TextColumn("{task.fields[eta]}"),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=console,
                transient=True,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)
        self._stack.close()

    def _print(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text, highlight=False)
            self.progress.refresh()
        else:
            err.print(text, highlight=False, soft_wrap=True)

    def _draw(self, *, force: bool = False) -> None:
        if self.progress is None or self.task is None:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at = now

        est = self.estimate
        self.progress.update(
            self.task,
            completed=est.fraction(),
            description=escape(est.description()),
            cases=f"{est.done_cases}/{est.total_cases}",
            eta=fmt.eta(est.eta_s()),
        )
        self.progress.refresh()

    def __call__(self, event: RunEvent) -> None:
        from jitbench.render import progress_line
        from jitbench.runner.events import (
            CaseFinished,
            CasePooled,
            CaseProgress,
            CaseStarted,
            FloatWidthChosen,
            KernelsLeftOut,
            ProcessStarted,
            RoundStarted,
            RunStarted,
            SuiteSkipped,
            WorkloadsLeftOut,
        )

        self.estimate.update(event)
        if isinstance(event, SuiteSkipped):
            self.suite_errors += 1
            self._print(
                f"[yellow]suite error:[/] {escape(event.error)} "
                "(skipped; the other suite files still run)"
            )
        elif isinstance(event, FloatWidthChosen):
            suites = ", ".join(event.suites)
            self._print(
                f"[cyan]float64:[/] {escape(suites)} declares float64 ({event.declared} of "
                f"{event.total} workload(s)), so the run is float64; --no-x64 runs float32"
            )
        elif isinstance(event, KernelsLeftOut):
            for name, why in event.kernels:
                self._print(f"[yellow]left out:[/] {escape(name)} ({escape(why)})")
        elif isinstance(event, WorkloadsLeftOut):
            defined = ", ".join(f"{name} ({'/'.join(sizes)})" for name, sizes in event.workloads)
            self._print(
                f"[yellow]left out:[/] {escape(defined)}, defining none of the sizes asked for "
                f"({escape(','.join(event.sizes))}); add theirs to --sizes to measure them"
            )
        elif isinstance(event, RunStarted):
            done = event.done_cases
            if self.progress is not None:
                self.task = self.progress.add_task("", total=1.0, cases="", eta="")
                self._draw(force=True)
            else:
                plan = fmt.eta(self.estimate.eta_s()).replace("ETA", "about")
                if done or event.redone_cases:
                    again = (
                        f", {event.redone_cases} measured again (the run stopped between "
                        "their sampling rounds)"
                        if event.redone_cases
                        else ""
                    )
                    err.print(
                        f"resuming run {event.run_id}: {done} of {event.total_cases} "
                        f"case(s) already measured{again} ({plan} left)"
                    )
                else:
                    err.print(f"run {event.run_id}: {event.total_cases} case(s), {plan}")
        elif isinstance(event, CaseStarted) and self.announce:
            if self.progress is not None:
                self._draw(force=True)  # drawn now, in case the case crashes the process
            else:  # rich flushes stderr after each print
                label = escape(event.case.label)
                err.print(f"[{event.index + 1}/{event.total}] {label} …", highlight=False)
        elif isinstance(event, CaseProgress):
            self._draw()
        elif isinstance(event, (ProcessStarted, RoundStarted)):
            if self.progress is None:
                err.print(escape(self.estimate.step))
            self._draw(force=True)
        elif isinstance(event, CaseFinished) and self.estimate.beside and self.estimate.rounds == 1:
            self._draw(force=True)  # its line comes once the process beside has it too
        elif isinstance(event, (CaseFinished, CasePooled)):
            line = progress_line.plain_case_line(
                event.measurements,
                processes=self.estimate.processes,
                rounds=self.estimate.rounds if isinstance(event, CaseFinished) else 1,
            )
            if self.progress is not None:
                self._print(escape(line))
                self._draw(force=True)
            else:
                eta = fmt.eta(self.estimate.eta_s())
                err.print(
                    f"[{event.index + 1}/{event.total}] {escape(line)} ({eta})",
                    highlight=False,
                    soft_wrap=True,
                )

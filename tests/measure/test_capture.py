"""What a workload prints is captured at the file-descriptor level and counted per mode
(`jitbench.measure.capture`), and reported as `prints-during-call`."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

from jitbench.measure import diagnose
from jitbench.measure.capture import OutputCapture, PrintTally, split_runtime_log
from jitbench.results import Mode, Severity


def test_python_fd_and_c_level_output_is_captured_and_attributed() -> None:
    libc = ctypes.CDLL(None)
    first, timed = PrintTally(), PrintTally()
    with OutputCapture() as capture:
        with capture.attribute(first, timed=False):
            print("hello from python")
        with capture.attribute(timed, timed=True):
            os.write(1, b"raw fd write\n")
            libc.printf(b"from printf %d\n", 42)  # buffered in C stdio until flushed
            print("to stderr", file=sys.stderr)
        print("made the inputs")  # outside any mode's calls
    assert (first.first_call_lines, first.timed_lines) == (1, 0)
    assert first.first_line == "hello from python"
    assert (timed.first_call_lines, timed.timed_lines) == (0, 3)
    assert timed.timed_bytes == len(b"raw fd write\nfrom printf 42\nto stderr\n")
    assert capture.unattributed.lines == 1


def test_streams_are_restored_and_runtime_logs_pass_through(tmp_path) -> None:
    # In a child process, so fds 1 and 2 are real files we can read back afterwards.
    script = textwrap.dedent(
        """
        import os, sys
        from jitbench.measure.capture import OutputCapture, PrintTally
        stdout_before = sys.stdout
        tally = PrintTally()
        with OutputCapture() as capture:
            with capture.attribute(tally, timed=True):
                print("captured")
                os.write(2, b"W0000 00:00:1700000000.000000  12 x.cc:3] an XLA warning\\n")
        assert sys.stdout is stdout_before
        print("after", tally.timed_lines)
        """
    )
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.run([sys.executable, "-c", script], stdout=fo, stderr=fe, check=False)
    assert proc.returncode == 0, err.read_text()
    assert out.read_text() == "after 1\n"  # "captured" did not reach the real stdout
    assert "an XLA warning" in err.read_text()  # the runtime's log line is not swallowed


def test_prints_during_call_says_where_and_how_much() -> None:
    assert diagnose.prints_during_call(PrintTally(), Mode.EAGER) is None
    timed = PrintTally()
    timed.add(b"loss 0.5\nloss 0.4\n", timed=True)
    d = diagnose.prints_during_call(timed, Mode.EAGER)
    assert d is not None and d.code == "prints-during-call" and d.severity is Severity.WARNING
    assert "2 line(s)" in d.message and "'loss 0.5'" in d.message
    traced = PrintTally()
    traced.add(b"x is Traced<ShapedArray(float32[8])>\n", timed=False)
    info = diagnose.prints_during_call(traced, Mode.JIT)
    assert info is not None and info.severity is Severity.INFO
    assert "trace time" in info.message and "jax.debug.print" in info.hint


# An XLA record as an H100 printed it in a worker process (the GPU's memory was taken):
# the header, its source-location trace and the blank line that ends it.
_XLA_RECORD = (
    b"E1127 07:58:06.033955    4115 cuda_executor.cc:1365] [0] Failed to allocate device "
    b"memory of 48.10GiB (51648761856 bytes): RESOURCE_EXHAUSTED: out of memory\n"
    b"=== Source Location Trace: === \n"
    b"external/xla+/xla/stream_executor/cuda/cuda_status.cc:45\n"
    b"external/xla+/xla/stream_executor/cuda/cuda_device_allocator.cc:230\n"
    b"\n"
)


def test_a_runtime_record_with_its_trace_is_not_the_workloads_printing() -> None:
    tally = PrintTally()
    tally.add(_XLA_RECORD * 3, timed=False)
    assert tally.lines == 0
    own, runtime = split_runtime_log(b"step 1\n" + _XLA_RECORD + b"step 2\n")
    assert own == [b"step 1\n", b"step 2\n"]
    assert b"".join(runtime) == _XLA_RECORD
    # A trace-like line of the workload's own, with no record before it, is its own.
    assert split_runtime_log(b"model.cc:12\n")[0] == [b"model.cc:12\n"]


def test_a_python_warning_is_not_the_workload_printing() -> None:
    text = (
        b"/home/me/suite.py:12: UserWarning: Explicitly requested dtype float64 requested "
        b"in zeros is not available\n"
        b"  return xp.zeros(x.shape, dtype='float64') + x\n"
        b"step 3\n"
        b"<stdin>:2: DeprecationWarning: old\n"
        b"  print('a source line is printed only after a warning')\n"
    )
    own, runtime = split_runtime_log(text)
    assert own == [b"step 3\n"] and len(runtime) == 4


def test_xlas_slow_compile_alarm_is_the_runtimes_output() -> None:
    text = (
        b"E1201 22:00:09.689196    1889 slow_operation_alarm.cc:73] \n"
        b"********************************\n"
        b"[Compiling module jit_cumsum_unrolled] Very slow compile? If you want to file a bug, "
        b"run with envvar XLA_FLAGS=--xla_dump_to=/tmp/foo and attach the results.\n"
        b"********************************\n"
        b"E1201 22:01:29.688623    1884 slow_operation_alarm.cc:140] The operation took 3m19s\n"
        b"\n"
        b"step 1\n"
    )
    own, runtime = split_runtime_log(text)
    assert own == [b"step 1\n"] and len(runtime) == 6

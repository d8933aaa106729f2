"""How a measurement records an exception (`measure.faults.error_info`)."""

from __future__ import annotations

from jitbench.measure.faults import add_hint, error_info


def _bare_assert() -> None:
    raise AssertionError  # what a bare `assert` raises outside pytest's rewriting


def test_an_exception_without_a_message_is_named_by_where_it_was_raised() -> None:
    try:
        _bare_assert()
    except AssertionError as exc:
        info = error_info(exc)
    assert info.type == "AssertionError"
    assert "test_faults.py:" in info.message and "raise AssertionError" in info.message


def test_a_message_and_a_hint_are_kept_as_they_are() -> None:
    exc = ValueError("bad shape")
    add_hint(exc, "pass a 2-D array.")
    info = error_info(exc)
    assert (info.type, info.message, info.hint) == ("ValueError", "bad shape", "pass a 2-D array.")

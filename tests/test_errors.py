"""Error messages: the close names an unknown one suggests."""

from __future__ import annotations

from jitbench.errors import close_names, unknown_name_message


def test_names_are_suggested_ignoring_case_as_devices_and_modes_match() -> None:
    assert close_names("s", ["S", "M", "L"]) == ["S"]
    assert close_names("SELU", ["selu", "log2"]) == ["selu"]
    assert unknown_name_message("size", "s", ["S", "M"]) == (
        "unknown size 's'; did you mean 'S'? known: S, M."
    )


def test_a_sweep_label_suggests_the_nearest_value_not_the_nearest_spelling() -> None:
    labels = ["S", "M", "n=100", "n=1000", "n=10000", "n=100000"]
    assert close_names("n=12345", labels) == ["n=10000"]
    assert close_names("n=70000", labels) == ["n=100000"]
    assert close_names("n=5", labels) == ["n=100"]
    # Other parameters, or no sweep at all: spelling decides, as for any name.
    assert close_names("m=12345", labels) == []
    assert close_names("n=12345", ["S", "M"]) == []


def test_the_message_has_no_stray_punctuation() -> None:
    message = unknown_name_message("workload", "nosuchwl", ["selu"])
    assert message == "unknown workload 'nosuchwl'; `jitbench list` shows all."


def test_an_unknown_name_of_100_kb_is_quoted_short() -> None:
    from jitbench.errors import unknown_name_message

    message = unknown_name_message("size", "x" * 100_000, ["S", "M"])
    assert len(message) < 200 and message.startswith("unknown size 'xxx")


def test_long_quoted_values_are_cut_and_prose_is_left_alone() -> None:
    from jitbench.errors import QUOTED_LIMIT, shorten_quoted

    long = "y" * 1000 + ".json"
    cut = shorten_quoted(f"no workload matches -k {long!r}; don't guess, the runs' folder")
    half = (QUOTED_LIMIT - 3) // 2
    kept = f"'{long[:half]}...{long[-half:]}'"
    assert cut == f"no workload matches -k {kept}; don't guess, the runs' folder"
    assert kept.endswith("y.json'")
    prose = "don't " + "z" * 500 + " the runs' folder"
    assert shorten_quoted(prose) == prose
    assert shorten_quoted('a "' + "q" * 300 + '" b').endswith('q" b')
    assert "..." in shorten_quoted('a "' + "q" * 300 + '" b')
    assert shorten_quoted("short 'S' stays") == "short 'S' stays"

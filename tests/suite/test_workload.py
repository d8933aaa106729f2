"""The @workload decorator and the Workload spec."""

from __future__ import annotations

import numpy as np
import pytest

from jitbench import ConfigError, WorkloadError, workload


def vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def test_generic_definition_serves_both_namespaces():
    @workload(inputs=vec, sizes={"S": {"n": 4}})
    def square(xp, x):
        """Square it."""
        return xp.square(x)

    x = np.arange(4, dtype=np.float32)
    assert square.name == "square"
    assert square.description == "Square it."
    np.testing.assert_array_equal(square.numpy_fn(x), x * x)
    out = square.jax_fn(x)
    assert type(out).__module__.startswith("jax")
    np.testing.assert_array_equal(np.asarray(out), x * x)


def test_separate_implementations_take_arrays_only():
    def np_side(x, *, steps):
        return x * steps

    @workload(inputs=vec, sizes={"S": {"n": 2}}, numpy=np_side, static_argnames=("steps",))
    def scaled(x, *, steps):
        return x * steps

    assert scaled.numpy_fn is np_side
    assert scaled.static_argnames == ("steps",)


def test_static_name_must_be_a_parameter():
    with pytest.raises(WorkloadError, match=r"'step'.*not a parameter"):

        @workload(inputs=vec, sizes={"S": {"n": 2}}, static_argnames=("step",))
        def f(xp, x, steps=1):
            return x


def test_sizes_required_and_names_checked():
    with pytest.raises(WorkloadError, match="at least one size"):
        workload(lambda xp, x: x, inputs=vec, sizes={}, name="empty")
    with pytest.raises(WorkloadError, match="invalid workload name"):
        workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 1}}, name="bad name!")


@pytest.mark.parametrize("name", ["ok\n", "ok\r\n", "x\ny", "caf\u00e9", "\u0441elu", ""])
def test_workload_names_are_matched_whole_and_ascii(name: str) -> None:
    with pytest.raises(WorkloadError, match=r"invalid workload name.*ASCII"):
        workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 1}}, name=name)


@pytest.mark.parametrize(
    ("sizes", "tags", "what"),
    [
        ({"S,M": {"n": 1}}, (), "invalid size"),
        ({"S\n": {"n": 1}}, (), "invalid size"),
        ({"S": {"n": 1}}, ("two words",), "invalid tag"),
        ({"S": {"n": 1}}, ("\u00e9t\u00e9",), "invalid tag"),
        ({"S": {"n": 1}}, "elementwise", "tags is a tuple"),
        ([("S", {"n": 1})], (), "at least one size"),
    ],
)
def test_size_names_and_tags_are_selectable(sizes: object, tags: object, what: str) -> None:
    with pytest.raises(WorkloadError, match=what):
        workload(lambda xp, x: x, inputs=vec, sizes=sizes, tags=tags, name="w")  # type: ignore[arg-type]


def test_make_inputs_is_seeded_and_splits_statics():
    def grid(rng, *, dtype, n, steps):
        return {"u": rng.standard_normal((n, n)).astype(dtype), "steps": steps}

    @workload(inputs=grid, sizes={"S": {"n": 3, "steps": 5}}, static_argnames=("steps",))
    def relax(xp, u, steps):
        return u

    a = relax.make_inputs(relax.size_params("S"), dtype="float32", seed=7)
    b = relax.make_inputs(relax.size_params("S"), dtype="float32", seed=7)
    assert a.static == {"steps": 5}
    assert set(a.kwargs) == {"u"} and a.kwargs["u"].dtype == np.float32
    np.testing.assert_array_equal(a.kwargs["u"], b.kwargs["u"])


def test_make_inputs_accepts_a_single_array_and_rejects_junk():
    one = workload(
        lambda xp, x: x,
        inputs=lambda rng, *, dtype, n: np.zeros(n, dtype),
        sizes={"S": {"n": 3}},
        name="one",
    )
    assert len(one.make_inputs({"n": 3}, dtype="float32").args) == 1
    junk = workload(
        lambda xp, x: x, inputs=lambda rng, *, dtype: "nope", sizes={"S": {}}, name="junk"
    )
    with pytest.raises(WorkloadError, match="returned str"):
        junk.make_inputs({}, dtype="float32")


def test_size_params_knows_presets_and_sweep_labels():
    wl = workload(
        lambda xp, x: x,
        inputs=vec,
        sizes={"S": {"n": 1}},
        sweep=[{"n": 10}, {"n": 100}],
        name="swept",
    )
    assert wl.sweep_labels == ["n=10", "n=100"]
    assert wl.size_params("n=100") == {"n": 100}
    assert wl.resolve_size(None) == ("S", {"n": 1})
    assert wl.resolve_size("n=10") == ("n=10", {"n": 10})
    with pytest.raises(ConfigError, match=r"unknown size 'XL'.*known: S, n=10, n=100.*'swept'"):
        wl.size_params("XL")

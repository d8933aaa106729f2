"""The @workload decorator and the Workload spec."""

from __future__ import annotations

from functools import partial

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


# --- published code as it is -------------------------------------------------------------


def steps_then_grid(rng, *, dtype, n):
    return 3, rng.standard_normal((n, n)).astype(dtype)


def test_static_argnums_are_positions_and_are_checked():
    @workload(inputs=steps_then_grid, sizes={"S": {"n": 2}}, static_argnums=(0,))
    def smooth(xp, steps, u):
        return u

    host = smooth.make_inputs({"n": 2}, dtype="float32")
    assert smooth.static_argnums == (0,) and host.static_argnums == (0,)
    assert host.args[0] == 3 and host.dtypes == {"u": "float32"}

    with pytest.raises(WorkloadError, match=r"position 5.*takes 2 positional"):
        workload(
            lambda xp, steps, u: u,
            inputs=steps_then_grid,
            sizes={"S": {"n": 2}},
            static_argnums=(5,),
            name="too_far",
        )

    # A function taking *args cannot be checked when decorated: its inputs are.
    loose = workload(
        lambda xp, *a: a[1],
        inputs=steps_then_grid,
        sizes={"S": {"n": 2}},
        static_argnums=(2,),
        name="loose",
    )
    with pytest.raises(WorkloadError, match=r"position 2, but its inputs made 2"):
        loose.make_inputs({"n": 2}, dtype="float32")


def test_a_misspelt_static_name_is_an_error_even_with_kwargs():
    def grid(rng, *, dtype, n):
        return {"u": np.zeros((n, n), dtype), "nsteps": 2}

    @workload(inputs=grid, sizes={"S": {"n": 2}}, static_argnames=("n_steps",))
    def relax(xp, u, **options):
        return u

    with pytest.raises(WorkloadError, match=r"'n_steps', which its inputs did not produce"):
        relax.make_inputs({"n": 2}, dtype="float32")


def test_a_jitted_jax_side_brings_its_own_static_arguments():
    import jax

    def np_kernel(steps, u, scale=1.0):
        return u * steps

    @partial(jax.jit, static_argnums=(0,), static_argnames=("scale",))
    def kernel(steps, u, scale=1.0):
        return u * steps * scale

    wl = workload(kernel, numpy=np_kernel, inputs=steps_then_grid, sizes={"S": {"n": 2}})
    assert wl.static_argnums == (0,) and wl.static_argnames == ("scale",)
    assert wl.eager == "nojit" and "kernel is jitted" in wl.eager_reason


def test_eager_choice_is_resolved_when_decorated():
    import jax

    helper = jax.jit(lambda v: v + 1)

    def calls_helper(x):
        return helper(x) * 2

    np_side = lambda x: x  # noqa: E731
    auto = workload(calls_helper, numpy=np_side, inputs=vec, sizes={"S": {"n": 2}})
    assert auto.eager == "nojit" and auto.eager_reason == "it calls jitted helper"
    kept = workload(calls_helper, numpy=np_side, inputs=vec, sizes={"S": {"n": 2}}, eager="call")
    assert kept.eager == "call"
    plain = workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 2}}, name="plain")
    assert plain.eager == "call" and plain.eager_reason == ""
    with pytest.raises(WorkloadError, match="eager='sometimes'"):
        workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 2}}, name="x", eager="sometimes")


def test_outputs_are_named_or_positional_and_get_fresh_copies():
    def gemm_np(alpha, c, a):
        c[:] = alpha * a + c

    def inputs(rng, *, dtype, n):
        return 2.0, np.ones(n, dtype), np.ones(n, dtype)

    @workload(inputs=inputs, sizes={"S": {"n": 3}}, numpy=gemm_np, outputs=("c",))
    def gemm(alpha, c, a):
        return alpha * a + c

    host = gemm.make_inputs({"n": 3}, dtype="float32")
    args, _ = gemm.fresh_arguments(host.args, {})
    assert args[1] is not host.args[1] and args[2] is host.args[2]
    assert gemm.output_locations(3, {}) == [1]
    with pytest.raises(WorkloadError, match="outputs names 'C'"):
        workload(gemm_np, numpy=gemm_np, inputs=inputs, sizes={"S": {"n": 3}}, outputs=("C",))


def test_setup_returns_the_call_arguments():
    seen = []

    def setup(x, *, k):
        seen.append(k)
        return (x.copy(),)

    def inputs(rng, *, dtype, n):
        return {"x": np.ones(n, dtype), "k": 2}

    def np_side(x, *, k):
        return x

    wl = workload(
        np_side,
        numpy=np_side,
        inputs=inputs,
        sizes={"S": {"n": 2}},
        setup=setup,
        static_argnames=("k",),
        name="with_setup",
    )
    host = wl.make_inputs({"n": 2}, dtype="float32")
    args, kwargs = wl.fresh_arguments(host.args, {**host.kwargs, **host.static})
    assert seen == [2] and len(args) == 1 and kwargs["k"] == 2
    bad = replace_setup(wl, lambda *a, **k: "oops")
    with pytest.raises(WorkloadError, match="setup of workload 'with_setup' returned str"):
        bad.fresh_arguments(host.args, {})


def replace_setup(wl, setup):
    from dataclasses import replace

    return replace(wl, setup=setup)


def test_float64_inputs_follow_a_float32_case_others_keep_theirs():
    def mixed(rng, *, dtype, n):
        return {
            "x": np.ones(n),  # float64, made without looking at dtype
            "alpha": np.float64(1.5),
            "idx": np.arange(n),
            "half": np.ones(n, np.float16),
            "z": np.ones(n, np.complex128),
            "w": np.ones(n),
        }

    @workload(inputs=mixed, sizes={"S": {"n": 2}}, input_dtypes={"w": "float64"})
    def f(xp, x, alpha, idx, half, z, w):
        return x

    kw = f.make_inputs({"n": 2}, dtype="float32").kwargs
    assert kw["x"].dtype == np.float32 and type(kw["alpha"]) is np.float32
    assert kw["idx"].dtype == np.int64 and kw["half"].dtype == np.float16
    assert kw["z"].dtype == np.complex64 and kw["w"].dtype == np.float64
    assert f.make_inputs({"n": 2}, dtype="float64").kwargs["x"].dtype == np.float64

    # A float32 input in a float64 case was asked for (a float32-only kernel): it stays.
    single = workload(
        lambda xp, x: x,
        inputs=lambda rng, *, dtype, n: np.ones(n, np.float32),
        sizes={"S": {"n": 2}},
        name="single",
    )
    assert single.make_inputs({"n": 2}, dtype="float64").args[0].dtype == np.float32
    with pytest.raises(WorkloadError, match="input_dtypes names 'v'"):
        replace_pins(f, {"v": "float32"}).make_inputs({"n": 2}, dtype="float32")


def replace_pins(wl, pins):
    from dataclasses import replace

    return replace(wl, input_dtypes=pins)


def test_a_workload_dtype_replaces_the_runs():
    ints = workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 2}}, dtype="int32", name="i")
    assert ints.dtype == "int32" and ints.case_dtype("float64") == "int32"
    free = workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 2}}, name="free")
    assert free.case_dtype("float64") == "float64"
    with pytest.raises(WorkloadError, match="dtype='floaty' is not a NumPy dtype"):
        workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 2}}, dtype="floaty", name="f")


def test_tolerances_are_numbers_or_per_dtype():
    wl = workload(
        lambda xp, x: x,
        inputs=vec,
        sizes={"S": {"n": 2}},
        name="tol",
        rtol={"float32": 1e-3},
        norm_tol=1e-6,
    )
    assert wl.rtol == {"float32": 1e-3} and wl.norm_tol == 1e-6
    with pytest.raises(WorkloadError, match="norm_tol must be a non-negative number"):
        workload(lambda xp, x: x, inputs=vec, sizes={"S": {"n": 2}}, name="t", norm_tol=-1)


def test_static_argnums_must_be_ints():
    with pytest.raises(WorkloadError, match=r"static_argnums takes positions \(ints\), got '0'"):
        workload(
            lambda xp, n, u: u,
            inputs=steps_then_grid,
            sizes={"S": {"n": 2}},
            static_argnums=("0",),
            name="strings",
        )


def test_static_arguments_are_taken_as_jax_jit_takes_them():
    def np_side(n, x, *, steps):
        return x * steps

    def jax_side(n, x, *, steps):
        return x * steps

    one = workload(
        jax_side,
        numpy=np_side,
        inputs=steps_then_grid,
        sizes={"S": {"n": 2}},
        static_argnames="steps",  # one name, not its letters
        static_argnums=0,  # one position
        outputs="x",
        name="one_each",
    )
    assert (one.static_argnames, one.static_argnums, one.outputs) == (("steps",), (0,), ("x",))
    with pytest.raises(WorkloadError, match=r"static_argnames names 'step',.*not a parameter"):
        workload(jax_side, numpy=np_side, inputs=vec, sizes={"S": {"n": 2}}, static_argnames="step")
    for bad, message in (
        (dict(static_argnums=1.5), r"static_argnums takes one or several positions \(ints\)"),
        (dict(static_argnums=True), r"static_argnums takes positions \(ints\), got True"),
        (dict(static_argnames=3), r"static_argnames takes one or several names \(str\), got 3"),
        (dict(static_argnames=[b"steps"]), r"static_argnames takes names \(str\), got b'steps'"),
    ):
        with pytest.raises(WorkloadError, match=message):
            workload(jax_side, numpy=np_side, inputs=vec, sizes={"S": {"n": 2}}, **bad)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sizes": {"S": 1000}}, r"sizes\['S'\] is 1000; map each size preset to the keyword"),
        ({"sizes": {"S": [("n", 1)]}}, r"sizes\['S'\] is \[\('n', 1\)\]"),
        ({"sizes": {"S": {1: 2}}}, r"sizes\['S'\] is \{1: 2\}"),
        ({"sizes": [("S", {"n": 1})]}, "needs at least one size preset, as a dict"),
        ({"sweep": {"n": 100}}, r"sweep takes a list .*, got \{'n': 100\}"),
        ({"sweep": [100, 1000]}, r"sweep takes a list .*sweep=\[\{'n': 100\}"),
        ({"sweep": "n=100"}, "sweep takes a list"),
    ],
)
def test_malformed_sizes_and_sweep_say_what_shape_is_expected(options, message):
    kwargs = {"inputs": vec, "sizes": {"S": {"n": 2}}, "name": "shaped", **options}
    with pytest.raises(WorkloadError, match=message) as info:
        workload(lambda xp, x: x, **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("fn", "name", "message"),
    [
        (42, None, "workload: 42 is not a function"),
        ("selu", "selu", "workload 'selu': 'selu' is not a function"),
    ],
)
def test_something_not_callable_is_not_a_function(fn, name, message):
    with pytest.raises(WorkloadError, match=message):
        workload(fn, inputs=vec, sizes={"S": {"n": 2}}, name=name)
    with pytest.raises(WorkloadError, match="numpy of workload 'f' is not callable"):
        workload(lambda x: x, numpy=np.zeros(2), inputs=vec, sizes={"S": {"n": 2}}, name="f")


def test_inputs_may_make_jax_arrays_and_get_host_arrays():
    import jax.numpy as jnp

    def one(rng, *, dtype, n):
        return jnp.arange(n, dtype=jnp.float32)

    def several(rng, *, dtype, n):
        return jnp.ones(n), {"w": jnp.zeros(2)}

    def by_name(rng, *, dtype, n):
        return {"x": jnp.ones(n), "k": 3}

    for inputs in (one, several, by_name):
        wl = workload(lambda xp, *a, **k: a, inputs=inputs, sizes={"S": {"n": 3}}, name="j")
        made = wl.make_inputs({"n": 3}, dtype="float32")
        leaves = [*made.args, *made.kwargs.values()]
        leaves = [leaf for x in leaves for leaf in (x.values() if isinstance(x, dict) else [x])]
        arrays = [x for x in leaves if not isinstance(x, int)]
        assert arrays and all(type(x) is np.ndarray and x.flags.writeable for x in arrays)
    assert list(wl.make_inputs({"n": 3}, dtype="float32").dtypes) == ["x"]

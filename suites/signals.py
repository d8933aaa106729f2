"""Signal processing: FFT-based work where both sides call a library FFT (pocketfft vs
XLA's DUCC) and jit can fuse the pointwise product between the transforms."""

from __future__ import annotations

from jitbench import workload


def signals_and_kernel(rng, *, dtype, batch, n, taps):
    x = rng.standard_normal((batch, n)).astype(dtype)
    kernel = (rng.standard_normal(taps) / taps).astype(dtype)
    return x, kernel


@workload(
    inputs=signals_and_kernel,
    sizes={
        "S": {"batch": 64, "n": 1920, "taps": 129},
        "M": {"batch": 128, "n": 8064, "taps": 129},
        "L": {"batch": 256, "n": 32_640, "taps": 129},
    },
    # n + taps - 1 is a power of two throughout, so every FFT length is fast on both sides.
    sweep=[{"batch": 64, "n": n - 128, "taps": 129} for n in (256, 1024, 4096, 16_384, 65_536)],
    tags=("signal", "fft"),
)
def fft_convolve(xp, x, kernel):
    """Full linear convolution of a batch of signals with one FIR kernel via rfft/irfft."""
    size = x.shape[-1] + kernel.shape[-1] - 1
    spectrum = xp.fft.rfft(x, n=size, axis=-1) * xp.fft.rfft(kernel, n=size)
    # NumPy < 2 transforms in float64; cast back so both sides return the input dtype.
    return xp.fft.irfft(spectrum, n=size, axis=-1).astype(x.dtype)

"""Measure one case: modes, timer, compilation, validation, diagnostics, the protocol."""

"""Thin callers of the one-case protocol for other tools: asv and `jitbench profile`."""

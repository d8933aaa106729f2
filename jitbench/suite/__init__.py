"""Workloads and suites: the `@workload` API, size presets, discovery by path and `-k` selection."""

"""`jitbench ab` and `bisect`'s measuring: two sides measured interleaved.

`sides` (a revision in a git worktree, or another Python, made a `duet.Side`), `duet` (the
parent: both sides' workers opened case by case, sampled round by round on one core) and
`serve` (what each side's worker, the run's one worker, does on request).
"""

"""Run many cases, one module per job: `plan` (the cases, their groups, a resume's
settings), `scheduler` (the loop over cases and rounds, checkpoints), `executors` (a case
in this process or in an `--isolate` `child`), `processes` (the workers, pooled case by
case), `overlap` (the second beside the first), `worker` and `channel` (the one worker
process and its pipe), `allocation`, `progress`, `events`, `signals`, `deadline`,
`forks`, `warmup`.
"""

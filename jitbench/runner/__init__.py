"""Run many cases, one module per job.

`plan` (the cases a config asks for; what a resume finishes), `scheduler` (the loop over
cases and rounds, checkpoints, resume), `executors` (measure a case in this process or in a
child), `child` (the child process), `deadline` (a case's time limit in this process),
`warmup` (readying a process), `signals` (SIGINT/SIGTERM as a clean stop), `events`.
"""

"""Run many cases: planning, the scheduler (rounds, checkpoints, resume) and the executors."""

"""The regression gate: compare two runs (or pooled sides) case by case."""

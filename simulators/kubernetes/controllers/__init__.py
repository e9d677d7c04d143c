"""The controllers of the simulated cluster, run synchronously in a fixed order (see base)."""

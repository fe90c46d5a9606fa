"""Performance harness: prints figures and ratios (never timed asserts). Run with `make bench`."""

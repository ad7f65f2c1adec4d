"""Benchmarks as a package: `python -m bench NAME`. Results are data (printed and written as
JSON under bench/out/), never assertions."""

"""Benchmarks that print figures (times, rates, ratios against a baseline run side by side).

Run one with ``python -m resnet_theory.benchmarks.NAME``. They are not timed tests: they measure and print,
and the tests only check that they run. The training-throughput benchmark is ``python -m resnet_theory.engine.bench``.
"""

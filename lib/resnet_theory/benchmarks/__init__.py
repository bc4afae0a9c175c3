"""Benchmarks that print figures (times, rates, ratios against a baseline run side by side).

Run one with ``python -m resnet_theory.benchmarks.NAME``. They are not timed tests: they measure and print,
and the tests only check that they run. The training-throughput benchmark is
``python -m resnet_theory.engine.bench``.

- :mod:`resnet_theory.benchmarks.linear`: the Theorem 2.1 factorisation at scale (d = 256, depth 1000).
- :mod:`resnet_theory.benchmarks.expressivity`: building and verifying the Theorem 3.2 network against n.
- :mod:`resnet_theory.benchmarks.quick_book`: each chapter's CPU and wall seconds; side by side against one at a time.
- :mod:`resnet_theory.benchmarks.ensemble`: many seeds of the digits network, one at a time against batched.
- :mod:`resnet_theory.benchmarks.experiments`: the experiments chapter's workload, today's against the baseline's;
  ``--pilot PATH`` writes the pilot its seeds are sized from.
"""

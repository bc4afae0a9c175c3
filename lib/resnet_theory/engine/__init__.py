"""The training engine: Hardt & Ma's all-convolutional ResNet (ICLR 2017, Section 4), trained and timed.

- :mod:`resnet_theory.engine.allconv`: the network (no batch norm, parameter-free shortcuts, fixed head).
- :mod:`resnet_theory.engine.data`: digits and CIFAR readers; device-resident batches with augmentation.
- :mod:`resnet_theory.engine.devices`: CPU/CUDA decisions (device, precision, layout); a run's CPU settings.
- :mod:`resnet_theory.engine.interval`: the logging interval (loss sums, divergence check); history records.
- :mod:`resnet_theory.engine.train`: one run: configuration, checkpoints, resume, the training loop, the CLI.
- :mod:`resnet_theory.engine.ensemble`: many seeds (and variants of one shape) trained as one batched model.
- :mod:`resnet_theory.engine.ablation`: the digits ablation runs, scored on the training set at the end.
- :mod:`resnet_theory.engine.bench`: training throughput, device-resident data against a DataLoader.
- :mod:`resnet_theory.engine.gpu_check`: the first command to run on a GPU machine (every step, briefly).
- :mod:`resnet_theory.engine.gpu_figures`: the committed GPU measurements (book/data/gpu/*.json), validated, as rows.
"""

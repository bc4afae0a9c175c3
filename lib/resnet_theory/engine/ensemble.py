"""Many seeds (and variants of one shape) of Hardt & Ma's network trained as one batched model.

The experiments chapter (Hardt & Ma, ICLR 2017, Section 4, on the 8x8 digits) needs ten or more seeds per
configuration. One small network per step leaves a CPU mostly idle between tiny kernels; stacking the
members into one network with *grouped convolutions* turns G small convolutions into one of G groups:

- :class:`GroupedResNet` holds G copies of :class:`resnet_theory.engine.allconv.AllConvResNet` of the same
  architecture (same widths, blocks, kernel, shortcuts, head kind; the weights, and so the initialisation,
  may differ). Every convolution becomes one ``Conv2d(G * c_in, G * c_out, groups=G)`` whose g-th block of
  output channels is member g's convolution; the channel-padding shortcut pads inside each group; the head
  is a batched matrix product. On maps of at most ``DENSE_MAX_PIXELS`` pixels (the 2 x 2 last stage of the
  digits network) a convolution is computed instead as one dense matrix per member, built from its kernel,
  and one batched matrix product, which a CPU does about twice as fast. The members never mix: member g's
  loss depends on member g's weights only.
- :func:`train_members` trains the members together on the engine's recipe (:mod:`resnet_theory.engine.train`):
  each member draws its own batches from its own data stream, seeded exactly as ``train.train`` seeds a run,
  starts from exactly the weights ``train.train`` would build for its seed, and is updated by momentum SGD
  with weight decay on convolution weights only, at its own learning rate. The results are
  :class:`resnet_theory.engine.train.TrainResult` records, one per member, with the engine's history format, and
  agree with one-at-a-time training up to float rounding (``tests/test_ensemble.py``). They compute in the
  configuration's ``precision`` as the engine does (float32 on the CPU, bf16 autocast on GPUs that have it),
  except that this SGD has no gradient scaler: ``"fp16"`` is refused, and on a GPU without bf16 ``"auto"``
  trains in float32 where the engine would use fp16 (:func:`resnet_theory.engine.devices.choose_precision`).
- A member whose loss diverges (the engine's guard: NaN, non-finite weights or a mean loss above
  ``10 ln(classes)`` over a logging interval) is stopped at that step exactly as the engine stops a run:
  its weights are zeroed and its learning rate set to 0, so it can no longer disturb anything, and its
  record says where it diverged.
- :func:`train_seeds` is the batched counterpart of ``train.train_seeds`` for many configurations and seeds;
  ``workers=2`` splits the members between two processes of one thread each.

``python -m resnet_theory.benchmarks.ensemble`` measures what each way of running many seeds buys.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from resnet_theory import validate
from resnet_theory.engine import allconv, devices
from resnet_theory.engine import train as engine
from resnet_theory.engine.interval import Interval, LossAccumulator, finished_message, history_record

#: Fields of TrainConfig that may differ between members trained together.
MEMBER_FIELDS = {"seed", "lr", "init"}


#: Largest input map (H * W pixels) on which GroupedResNet computes a convolution as a dense batched product.
DENSE_MAX_PIXELS = 4

_DENSE_TABLES: dict[tuple, tuple[torch.Tensor, tuple[int, int]]] = {}


def _dense_table(h: int, w: int, kernel, stride, padding, device=None) -> tuple[torch.Tensor, tuple[int, int]]:
    """For a convolution on an h x w map: ``table[o, i]`` is the kernel position (row-major) linking output
    pixel o to input pixel i, or kh * kw (a zero weight) where none does; and the output size."""
    key = (h, w, tuple(kernel), tuple(stride), tuple(padding), str(device))
    if key not in _DENSE_TABLES:
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
        ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
        table = torch.full((ho * wo, h * w), kh * kw, dtype=torch.long)
        for oi in range(ho):
            for oj in range(wo):
                for a in range(kh):
                    for b in range(kw):
                        i, j = oi * sh - ph + a, oj * sw - pw + b
                        if 0 <= i < h and 0 <= j < w:
                            table[oi * wo + oj, i * w + j] = a * kw + b
        _DENSE_TABLES[key] = (table.to(device), (ho, wo))
    return _DENSE_TABLES[key]


def _stack_conv(convs: Sequence[nn.Conv2d]) -> nn.Conv2d:
    """One grouped convolution whose g-th output block is ``convs[g]`` (weights copied)."""
    first = convs[0]
    groups = len(convs)
    out = nn.Conv2d(
        groups * first.in_channels,
        groups * first.out_channels,
        first.kernel_size,
        stride=first.stride,
        padding=first.padding,
        groups=groups,
        bias=first.bias is not None,
    )
    with torch.no_grad():
        out.weight.copy_(torch.cat([c.weight for c in convs], dim=0))
        if first.bias is not None:
            out.bias.copy_(torch.cat([c.bias for c in convs], dim=0))
    return out


def _unstack_conv(grouped: nn.Conv2d, groups: int, member: int) -> dict[str, torch.Tensor]:
    per = grouped.out_channels // groups
    state = {"weight": grouped.weight.detach()[member * per : (member + 1) * per].clone()}
    if grouped.bias is not None:
        state["bias"] = grouped.bias.detach()[member * per : (member + 1) * per].clone()
    return state


class GroupedResNet(nn.Module):
    """G :class:`~resnet_theory.engine.allconv.AllConvResNet` members of one architecture as one network.

    ``forward`` takes ``(N, G * C, H, W)`` (member g's images in channels ``g*C .. (g+1)*C - 1``) and
    returns logits ``(N, G, classes)``. :meth:`member_state_dict` gives member g back as an
    ``AllConvResNet`` state dict.
    """

    def __init__(self, members: Sequence[allconv.AllConvResNet]):
        super().__init__()
        members = list(members)
        if not members or not all(isinstance(m, allconv.AllConvResNet) for m in members):
            raise TypeError("GroupedResNet needs a non-empty list of AllConvResNet members")
        first = members[0]

        def shape(m):
            return (
                m.num_classes,
                m.in_channels,
                m.stem_channels,
                m.widths,
                m.blocks_per_stage,
                m.kernel_size,
                m.skip,
                m.trainable_head,
                m.head_rank,
                m.stem.bias is not None,
            )

        if any(shape(m) != shape(first) for m in members):
            raise ValueError(
                "all members must share one architecture (classes, channels, widths, blocks, kernel, "
                "shortcuts, head kind, biases); only the weights may differ"
            )
        self.groups = len(members)
        self.num_classes, self.in_channels = first.num_classes, first.in_channels
        self.skip, self.trainable_head = first.skip, first.trainable_head
        self.stem = _stack_conv([m.stem for m in members])
        self.blocks = nn.ModuleList()
        self.block_channels: list[tuple[int, int, int]] = []
        for s, stage in enumerate(first.stages):
            for b, block in enumerate(stage):
                pair = nn.ModuleList(
                    [
                        _stack_conv([m.stages[s][b].conv1 for m in members]),
                        _stack_conv([m.stages[s][b].conv2 for m in members]),
                    ]
                )
                self.blocks.append(pair)
                self.block_channels.append((block.in_channels, block.out_channels, block.stride))
        head = torch.stack([m.head.weight.detach() for m in members])  # (G, classes, width)
        if self.trainable_head:
            self.head = nn.Parameter(head.clone())
        else:
            self.register_buffer("head", head.clone())
        self._layout = [(s, b) for s, stage in enumerate(first.stages) for b in range(len(stage))]

    def _shortcut(self, x: torch.Tensor, cin: int, cout: int, stride: int) -> torch.Tensor:
        if stride > 1:
            x = F.avg_pool2d(x, stride, stride, ceil_mode=True)
        if cout > cin:
            n, _, h, w = x.shape
            x = F.pad(x.view(n, self.groups, cin, h, w), (0, 0, 0, 0, 0, cout - cin)).view(n, -1, h, w)
        return x

    def _conv(self, conv: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
        """``conv(x)``; on maps of at most DENSE_MAX_PIXELS pixels as one batched matrix product per member.

        On a tiny map (the digits network's last stage is 2 x 2) a convolution is a small dense linear map
        from the C_in * H * W inputs to the C_out * H' * W' outputs of each member; one ``bmm`` over the
        members computes it about twice as fast on a CPU as the grouped convolution, whose backward pass is
        slow at these sizes. Same result up to float rounding (tests/test_ensemble.py).
        """
        n, _, h, w = x.shape
        if h * w > DENSE_MAX_PIXELS or isinstance(conv.padding, str):
            return conv(x)
        table, (ho, wo) = _dense_table(h, w, conv.kernel_size, conv.stride, conv.padding, x.device)
        G = self.groups
        cout, cin = conv.out_channels // G, conv.in_channels // G
        kernel = F.pad(conv.weight.view(G, cout, cin, -1), (0, 1))  # a zero at the index past the kernel
        dense = kernel[:, :, :, table]  # (G, C_out, C_in, H'W', HW)
        dense = dense.permute(0, 2, 4, 1, 3).reshape(G, cin * h * w, cout * ho * wo)
        y = torch.bmm(x.reshape(n, G, cin * h * w).transpose(0, 1), dense)  # (G, N, C_out H' W')
        if conv.bias is not None:
            y = y + conv.bias.view(G, 1, cout, 1).expand(G, 1, cout, ho * wo).reshape(G, 1, -1)
        return y.transpose(0, 1).reshape(n, G * cout, ho, wo)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[1] != self.groups * self.in_channels:
            raise ValueError(
                f"expected (N, {self.groups * self.in_channels}, H, W) for {self.groups} members, got {tuple(x.shape)}"
            )
        x = self._conv(self.stem, x)
        for (conv1, conv2), (cin, cout, stride) in zip(self.blocks, self.block_channels):
            branch = self._conv(conv2, F.relu(self._conv(conv1, x)))
            x = self._shortcut(x, cin, cout, stride) + branch if self.skip else branch
        features = x.mean(dim=(2, 3)).view(x.shape[0], self.groups, -1)  # (N, G, width)
        return torch.einsum("ngw,gcw->ngc", features, self.head)

    def member_state_dict(self, member: int) -> dict[str, torch.Tensor]:
        """Member ``member``'s weights, keyed as in ``AllConvResNet.state_dict()``."""
        if not 0 <= member < self.groups:
            raise IndexError(f"member {member} out of range 0..{self.groups - 1}")
        state = {f"stem.{k}": v for k, v in _unstack_conv(self.stem, self.groups, member).items()}
        for (s, b), (conv1, conv2) in zip(self._layout, self.blocks):
            for name, conv in (("conv1", conv1), ("conv2", conv2)):
                for k, v in _unstack_conv(conv, self.groups, member).items():
                    state[f"stages.{s}.{b}.{name}.{k}"] = v
        state["head.weight"] = self.head.detach()[member].clone()
        return state

    def member_views(self):
        """``(parameter, decays)`` for every trainable parameter; dim 0 of each splits into G member blocks."""
        for module in self.modules():
            for name, p in module.named_parameters(recurse=False):
                if p.requires_grad:
                    yield p, isinstance(module, nn.Conv2d) and name == "weight"


def _check_members(configs: Sequence[engine.TrainConfig]) -> engine.TrainConfig:
    if not configs:
        raise ValueError("train_members needs at least one configuration")
    if not all(isinstance(c, engine.TrainConfig) for c in configs):
        raise TypeError("train_members takes TrainConfig objects")
    first = configs[0]
    shared = {k: v for k, v in first.to_dict().items() if k not in MEMBER_FIELDS}
    for c in configs:
        c.validate()
        differ = [k for k, v in c.to_dict().items() if k not in MEMBER_FIELDS and shared[k] != v]
        if differ:
            raise ValueError(
                f"members trained together may differ only in {sorted(MEMBER_FIELDS)}; these differ too: {differ}"
            )
    if first.out_dir or first.resume or first.compile:
        raise ValueError(
            "batched training keeps no checkpoints and does not compile: out_dir, resume and compile must be unset"
        )
    if first.on_divergence != "stop":
        raise ValueError("batched members are stopped, not raised, on divergence: set on_divergence='stop'")
    return first


def train_members(configs: Sequence[engine.TrainConfig]) -> list[engine.TrainResult]:
    """Train one member per configuration, all together (see the module docstring).

    The configurations may differ only in ``seed``, ``lr`` and ``init``; all must have
    ``on_divergence="stop"`` and no ``out_dir``. Returns one ``TrainResult`` per configuration, in order
    (``model`` is the member's ``AllConvResNet`` with its final weights).
    """
    configs = list(configs)
    shared = _check_members(configs)
    device = engine._device(shared, 0, 1)
    facts = devices.describe(device)
    precision = devices.choose_precision(shared.precision, facts, scaler_allowed=False)
    with (
        devices.cpu_settings(flush_denormal=shared.flush_denormal and device.type == "cpu"),
        devices.backend_settings(facts, shared.deterministic),
    ):
        members = _Members(configs, shared, device, precision)
        members.train_steps()
        return members.results()


class _Members:
    """The members trained together: one :class:`GroupedResNet`, its momentum SGD by hand (each member at its
    own learning rate), one data stream per member, and one history per member in the engine's format."""

    def __init__(self, configs, shared: engine.TrainConfig, device: torch.device, precision: devices.Precision):
        self.configs, self.shared, self.device, self.precision = configs, shared, device, precision
        G = self.groups = len(configs)
        self.train_data, self.test_data, self.channels = engine.device_datasets(shared, device)
        members, self.streams = [], []
        for c in configs:  # exactly the draws train.train makes for this seed
            data_seed = engine.seed_model_draws(c.seed)
            members.append(engine.build_model(c, in_channels=self.channels))
            generator = torch.Generator(device=device).manual_seed(data_seed)
            self.streams.append(engine.BatchStream(self.train_data, c.batch_size, generator, *c.augmentation))
        self.net = GroupedResNet(members).to(device)
        self.trainable = allconv.count_parameters(members[0])
        self.params = list(self.net.member_views())
        self.buffers = [torch.zeros_like(p) for p, _ in self.params]
        self.base_lr = torch.tensor([c.lr for c in configs], dtype=torch.float32, device=device)
        self.alive = torch.ones(G, dtype=torch.float32, device=device)
        self.expand = [torch.arange(G, device=device).repeat_interleave(p.shape[0] // G) for p, _ in self.params]
        self.histories: list[list[dict]] = [[] for _ in range(G)]
        self.diverged = [False] * G
        self.messages = [""] * G
        self.last_loss = [float("nan")] * G
        self.step, self.wall = 0, 0.0

    def _autocast(self):
        autocast = self.precision.autocast
        return torch.autocast(self.device.type, dtype=autocast, enabled=autocast is not None)

    def evaluate(self, step: int, members: list[int]) -> None:
        """Every member on the whole test set; an ``eval`` record for each of ``members``."""
        G, count = self.groups, 0
        losses, correct = torch.zeros(G, dtype=torch.float64), torch.zeros(G, dtype=torch.float64)
        self.net.eval()
        with torch.no_grad():
            for x, y in self.test_data.batches(
                self.shared.eval_batch_size, None, augment=False, shuffle=False, drop_last=False
            ):
                with self._autocast():
                    logits = self.net(x.repeat(1, G, 1, 1)).float()  # (N, G, classes)
                ce = F.cross_entropy(logits.permute(0, 2, 1), y[:, None].expand(-1, G), reduction="none")
                losses += ce.sum(0).double().cpu()
                correct += (logits.argmax(2) == y[:, None]).sum(0).double().cpu()
                count += y.numel()
        self.net.train()
        for g in members:
            self.histories[g].append(
                history_record(
                    "eval", step, test_loss=float(losses[g] / count), test_accuracy=float(correct[g] / count)
                )
            )

    def _update(self, lr: torch.Tensor) -> torch.Tensor:
        """One momentum-SGD step of every member on its own next batch; returns the members' losses."""
        shared = self.shared
        batches = [next(s) for s in self.streams]
        x = torch.stack([b[0] for b in batches], dim=1).flatten(1, 2)  # (N, G * C, H, W)
        y = torch.stack([b[1] for b in batches], dim=1)  # (N, G)
        with self._autocast():
            logits = self.net(x).float()
        losses = F.cross_entropy(logits.permute(0, 2, 1), y, reduction="none").mean(0)  # (G,)
        for p, _ in self.params:
            p.grad = None
        losses.sum().backward()
        with torch.no_grad():  # momentum SGD as torch.optim.SGD: buf = m buf + (g + wd p); p -= lr buf
            for (p, decays), buf, idx in zip(self.params, self.buffers, self.expand):
                d = p.grad.add(p, alpha=shared.weight_decay) if decays and shared.weight_decay else p.grad
                buf.mul_(shared.momentum).add_(d)
                p.sub_(lr[idx].view(-1, *([1] * (p.dim() - 1))) * buf)
        return losses

    def _weights_finite(self) -> torch.Tensor:
        G = self.groups
        return torch.stack([p.detach().view(G, -1).isfinite().all(1) for p, _ in self.params]).all(0)

    def train_steps(self) -> None:
        """Train every member up to ``steps`` (the engine's schedule), logging every ``log_every`` steps."""
        shared = self.shared
        for g, c in enumerate(self.configs):
            self.histories[g].append(
                history_record(
                    "start",
                    0,
                    world_size=1,
                    local_batch_size=c.batch_size,
                    device=str(self.device),
                    precision=self.precision.name,
                    trainable_parameters=self.trainable,
                    config=c.to_dict(),
                    batched_members=self.groups,
                )
            )
        if shared.eval_every:
            self.evaluate(0, list(range(self.groups)))
        losses = LossAccumulator(self.device, self.groups)
        started = losses.started
        self.net.train()
        while self.step < shared.steps:
            factor = engine.learning_rate(shared, self.step) / shared.lr  # the schedule's factor, shared by all
            losses.add(self._update(self.base_lr * factor * self.alive))
            self.step += 1
            want_log = self.step % shared.log_every == 0 or self.step == shared.steps
            want_eval = shared.eval_every and self.step % shared.eval_every == 0
            if not (want_log or want_eval):
                continue
            alive_now = self._log_interval(losses.close(self.step, self._weights_finite()), factor, started)
            if want_eval and alive_now:
                self.evaluate(self.step, alive_now)
            if all(self.diverged):
                break
            losses.restart()
        self.wall = time.perf_counter() - started

    def _log_interval(self, interval: Interval, factor: float, started: float) -> list[int]:
        """Record a closed interval for every member still training; stop those the guard stops. Returns the
        members that train on."""
        rate = interval.images_per_second(self.shared.batch_size)
        alive_now = []
        for g in range(self.groups):
            if self.diverged[g]:
                continue
            record = interval.record(
                g,
                threshold=self.shared.divergence_threshold(),
                lr=self.configs[g].lr * factor,
                images_per_s=rate,
                seconds=interval.ended - started,
                kept=lambda: "no checkpoint was written before it",
            )
            self.histories[g].append(record)
            if record["kind"] == "diverged":
                self.diverged[g], self.messages[g] = True, record["message"]
                self._stop(g)
            else:
                self.last_loss[g] = record["loss"]
                alive_now.append(g)
        return alive_now

    def _stop(self, g: int) -> None:
        """Stop member ``g``: no weights, no momentum, no learning rate, so it can disturb nothing."""
        G = self.groups
        with torch.no_grad():
            self.alive[g] = 0.0
            for (p, _), buf in zip(self.params, self.buffers):
                p.view(G, -1)[g].zero_()
                buf.view(G, -1)[g].zero_()
            if not self.net.trainable_head:
                self.net.head[g].zero_()

    def results(self) -> list[engine.TrainResult]:
        """One ``TrainResult`` per member, after a last evaluation of those not evaluated at the last step."""
        step, histories = self.step, self.histories
        missing = [
            g
            for g in range(self.groups)
            if not self.diverged[g] and not (histories[g][-1]["kind"] == "eval" and histories[g][-1]["step"] == step)
        ]
        if missing:
            self.evaluate(step, missing)
        results = []
        for g, c in enumerate(self.configs):
            model = engine.build_model(c, in_channels=self.channels)
            model.load_state_dict(self.net.member_state_dict(g))
            if self.diverged[g]:
                acc = loss = float("nan")
                steps_done = next(r["step"] for r in histories[g] if r["kind"] == "diverged")
            else:
                acc, loss, steps_done = histories[g][-1]["test_accuracy"], histories[g][-1]["test_loss"], step
                self.messages[g] = finished_message(step, acc, loss)
                histories[g].append(history_record("end", step, message=self.messages[g], seconds=self.wall))
            results.append(
                engine.TrainResult(
                    config=c,
                    history=histories[g],
                    steps_done=steps_done,
                    final_test_accuracy=acc,
                    final_test_loss=loss,
                    final_train_loss=self.last_loss[g],
                    diverged=self.diverged[g],
                    message=self.messages[g],
                    checkpoint_path=None,
                    wall_seconds=self.wall,
                    images_per_second=self.shared.batch_size * step / self.wall if self.wall > 0 else float("nan"),
                    trainable_parameters=self.trainable,
                    model=model,
                )
            )
        return results


# --- many configurations and seeds ------------------------------------------------------------------------
def _group_key(config: engine.TrainConfig) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in config.to_dict().items() if k not in MEMBER_FIELDS))


def _groups(configs: Sequence[engine.TrainConfig]) -> list[list[int]]:
    """Indices of the configurations that may share one batched model, group by group, in first-seen order."""
    order: dict[tuple, list[int]] = {}
    for i, c in enumerate(configs):
        order.setdefault(_group_key(c), []).append(i)
    return list(order.values())


def _worker(configs, threads):
    with devices.cpu_settings(threads=threads):
        results = train_groups(configs)
    for r in results:
        r.model = None  # results cross a process boundary: keep them small
    return results


def train_groups(configs: Sequence[engine.TrainConfig]) -> list[engine.TrainResult]:
    """Train each configuration once, batching together those that may share a model; results in order."""
    configs = list(configs)
    results: list = [None] * len(configs)
    for indices in _groups(configs):
        for i, r in zip(indices, train_members([configs[i] for i in indices])):
            results[i] = r
    return results


def train_seeds(
    configs: Sequence[engine.TrainConfig] | engine.TrainConfig, seeds: Sequence[int], *, workers: int = 1
) -> list[list[engine.TrainResult]]:
    """For every configuration, one run per seed (``on_divergence`` set to "stop"); ``result[i][j]`` is
    configuration i at seed j. Configurations that differ only in learning rate or initialisation are
    trained in one batched model with all their seeds.

    ``workers=2`` splits the members into two halves trained in two processes of one thread each (members
    keep their own seeds, so the results do not depend on ``workers``; the models are not returned then).
    """
    single = isinstance(configs, engine.TrainConfig)
    configs = [configs] if single else list(configs)
    if hasattr(seeds, "__len__"):  # counted before a range of a billion seeds is turned into a list
        runs = float(len(seeds)) * len(configs)
        validate.check_budget("seeds", runs, validate.LOOP_LIMIT, what="work", unit="training runs", value=seeds)
    seeds = [validate.integer(f"seeds[{i}]", s) for i, s in enumerate(seeds)]
    if not seeds or not configs:
        raise ValueError("train_seeds needs at least one configuration and one seed")
    workers = validate.positive_int("workers", workers)
    flat = [dataclasses.replace(c, seed=s, on_divergence="stop") for c in configs for s in seeds]
    if workers == 1:
        results = train_groups(flat)
    else:
        import concurrent.futures
        import multiprocessing

        # Split every batched group evenly between the workers, so that each trains half of every group.
        shares: list[list[int]] = [[] for _ in range(workers)]
        for indices in _groups(flat):
            for w in range(workers):
                shares[w].extend(indices[w::workers])
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = [pool.submit(_worker, [flat[i] for i in share], 1) for share in shares if share]
            parts = [f.result() for f in futures]
        results = [None] * len(flat)
        for share, part in zip([s for s in shares if s], parts):
            for i, r in zip(share, part):
                results[i] = r
    grouped = [results[i * len(seeds) : (i + 1) * len(seeds)] for i in range(len(configs))]
    return grouped[0] if single else grouped


# --- statistics over seeds ----------------------------------------------------------------------------------
def _values(values, name: str) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ValueError(f"{name} needs at least one value")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite (score diverged runs first), got {v.tolist()}")
    return v


def _bootstrap_args(name: str, resamples, seed, level, *sizes: int) -> tuple[int, int, float]:
    """``resamples`` (at least 2: one resample has no spread), ``seed`` and ``level`` (strictly between 0 and 1)
    checked, and the resample indices' memory (``resamples`` x each sample's size) within the budget."""
    resamples = validate.integer("resamples", resamples, minimum=2)
    seed = validate.non_negative_int("seed", seed)
    level = validate.probability("level", level, open_low=True, open_high=True)
    validate.check_budget("resamples", 16.0 * resamples * sum(sizes), validate.memory_limit_bytes(), value=resamples)
    return resamples, seed, level


def bootstrap_median(values, *, resamples: int = 4000, seed: int = 0, level: float = 0.95) -> dict:
    """The median of ``values`` with its bootstrap standard error and percentile confidence interval.

    ``resamples`` resamples with replacement (numpy generator seeded with ``seed``, so the interval is
    reproducible); returns ``{"median", "se", "low", "high", "n"}`` with ``low``/``high`` the ``level``
    percentile interval.
    """
    v = _values(values, "bootstrap_median")
    resamples, seed, level = _bootstrap_args("bootstrap_median", resamples, seed, level, v.size)
    rng = np.random.default_rng(seed)
    medians = np.median(v[rng.integers(0, v.size, (resamples, v.size))], axis=1)
    tail = 100 * (1 - level) / 2
    return {
        "median": float(np.median(v)),
        "se": float(medians.std(ddof=1)),
        "low": float(np.percentile(medians, tail)),
        "high": float(np.percentile(medians, 100 - tail)),
        "n": int(v.size),
    }


def bootstrap_median_difference(a, b, *, resamples: int = 4000, seed: int = 0, level: float = 0.95) -> dict:
    """``median(a) - median(b)`` for two independent samples, with bootstrap standard error and interval."""
    va, vb = _values(a, "bootstrap_median_difference (a)"), _values(b, "bootstrap_median_difference (b)")
    resamples, seed, level = _bootstrap_args("bootstrap_median_difference", resamples, seed, level, va.size, vb.size)
    rng = np.random.default_rng(seed)
    diffs = np.median(va[rng.integers(0, va.size, (resamples, va.size))], axis=1) - np.median(
        vb[rng.integers(0, vb.size, (resamples, vb.size))], axis=1
    )
    tail = 100 * (1 - level) / 2
    return {
        "median": float(np.median(va) - np.median(vb)),
        "se": float(diffs.std(ddof=1)),
        "low": float(np.percentile(diffs, tail)),
        "high": float(np.percentile(diffs, 100 - tail)),
        "n": int(min(va.size, vb.size)),
    }


def steps_to_level(result: engine.TrainResult, level: float) -> int | None:
    """The first logged step at which the mean training loss is below ``level`` (``None``: never, or the
    run diverged first). The resolution is the run's ``log_every``."""
    level = validate.positive_float("level", level)
    for record in result.history:
        if record["kind"] == "diverged":
            return None
        if record["kind"] == "train" and record["loss"] < level:
            return int(record["step"])
    return None

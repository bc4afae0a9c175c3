"""Hardt & Ma's all-convolutional residual network, without batch normalisation.

Implements the CIFAR architecture of Hardt & Ma, "Identity Matters in Deep Learning" (ICLR 2017),
Section 4 (experiments), as described in ``shared/papers/hardt_ma.md`` Section 3:

- a 3x3 stem convolution ``in_channels -> 16``;
- stages of residual blocks ``x + C2(relu(C1 x))`` at widths 64, 128, 256 with 9 blocks each; the first
  block of every stage after the first has stride 2 (in C1; C2 always has stride 1). When a block changes
  the shape, the shortcut average-pools (window = stride) and pads the new channels with zeros, so the
  identity path has no parameters;
- a global average pool over whatever spatial size remains (8x8 for a 32x32 input);
- a fixed random projection ``width -> num_classes``, registered as a buffer and never trained.

There is no batch norm, no other normalisation, no dropout and no max pooling.

Choices the paper leaves open, and what this module does
--------------------------------------------------------
- **Initialisation** (``init="small"``, the paper's): every residual convolution (C1 and C2 of every block)
  has weights drawn from N(0, sigma^2) with standard deviation ``sigma = 1/(k^2 c)``, where ``k`` is the
  kernel size and ``c`` the number of *output* channels of that convolution (the notes read the paper's
  ``c`` as output channels; for C2 input and output channels agree anyway, so the reading only matters
  for the first C1 of a stage). With ``k = 3, c = 64`` this is 1/576, about 0.0017: the residual branches
  start close to zero and the network starts close to the identity map on the stem's features.
  ``init="standard"`` is He/Kaiming initialisation as in the original ResNet code: standard deviation
  ``sqrt(2 / (k^2 c))`` with the same ``c`` (output channels, "fan-out"). ``init="printed-standard"`` is the
  standard deviation ``1/(k sqrt(c))`` that Section 4.1 names as the one "used for standard convolutional
  layers" (He's without its ReLU gain sqrt 2), the comparison the paper's sentence on the initialisation
  makes. The stem is not a residual
  convolution: it gets the He initialisation in both modes, so that the features the identity paths carry
  are not vanishingly small.
- **Biases**: every convolution has a bias, initialised to zero (without batch norm nothing else can shift
  a feature map). ``bias=False`` removes them. Weight decay, in the paper, is on conv weights only: the
  parameters named ``*.weight`` of the convolutions (see :func:`conv_weight_parameters`).
- **Head**: the projection matrix has i.i.d. N(0, 1/width) entries, so the logits have the scale of the
  pooled features. ``trainable_head=True`` makes it an ``nn.Parameter`` (for the ablation).
- **Plain network** (``skip=False``): the same blocks, each computing ``C2(relu(C1 x))`` with no identity
  path, so the plain and the residual network have exactly the same layers and parameters.

Parameter count for CIFAR-10 (:func:`parameter_breakdown`)
----------------------------------------------------------
Conv weights: stem 3*16*9 = 432; stage 1: 16*64*9 + 64*64*9 + 8 * 2 * 64*64*9 = 635,904; stage 2:
64*128*9 + 128*128*9 + 8 * 2 * 128*128*9 = 2,580,480; stage 3: 128*256*9 + 256*256*9 + 8 * 2 * 256*256*9 =
10,321,920; together 13,538,736 (13.54M at the paper's four digits). Conv biases: 16 + 18*64 + 18*128 +
18*256 = 8,080 (the paper does not say whether its convolutions have biases). Trainable in all: 13,546,816
(13.55M), 0.32% below the paper's 13.59M. The paper gives no breakdown of its figure; the experiments chapter
shows one that reaches it, trained 1x1 convolution shortcuts where the width changes, but only with the
convolutions' biases (13.58M without any bias), and the paper's shortcuts have no parameters. The fixed head adds
256*10 = 2,560 stored, untrained numbers.

FLOPs (:func:`flops_per_image`)
-------------------------------
Counted from the layers by forward hooks on a copy of the model on PyTorch's ``meta`` device (shapes only,
no arithmetic). One multiply-add counts as 2 FLOPs. Only convolutions and the head (matrix products) are
counted; bias additions, ReLUs, residual additions and pooling are elementwise and left out (under 0.1% of
the total here). A training step costs about 3x the forward pass (:func:`training_flops_per_image`): the
backward pass computes a gradient with respect to both the input and the weights of every layer, each
about as costly as the forward product. (The stem needs no input gradient, so 3x slightly overestimates.)
For a 32x32 CIFAR-10 image this comes to 3,945,632,768 forward FLOPs (about 3.95 GFLOPs; the head is 5,120
of them).
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .. import validate

#: The paper's trainable parameter count for the CIFAR-10 network (text of Section 4).
PAPER_TRAINABLE_PARAMETERS = 13_590_000
#: The count of the conv weights alone for CIFAR-10, from the architecture (see the module docstring).
CIFAR10_CONV_WEIGHTS = 13_538_736

#: A small variant for the CPU on 8x8 digits (1 channel): same structure, narrower and shallower.
SMALL_CONFIG = dict(in_channels=1, stem_channels=16, widths=(16, 32, 64), blocks_per_stage=3)

INITS = ("small", "standard", "printed-standard")


def _positive_int(value, name: str) -> int:
    return validate.positive_int(name, value)


def _flag(value, name: str) -> bool:
    return validate.boolean(name, value)


#: Bytes a residual block costs beyond its weights (Python module objects, parameter bookkeeping).
_BLOCK_OVERHEAD_BYTES = 20_000


def estimate_model_bytes(
    in_channels: int,
    stem_channels: int,
    widths: Sequence[int],
    blocks: Sequence[int],
    kernel_size: int,
    num_classes: int,
) -> int:
    """Memory the float32 weights and the module objects of an :class:`AllConvResNet` take (an estimate)."""
    k2 = kernel_size * kernel_size
    params = k2 * in_channels * stem_channels
    channels = stem_channels
    for width, count in zip(widths, blocks):
        params += k2 * (channels * width + width * width) + (count - 1) * 2 * k2 * width * width
        channels = width
    params += channels * num_classes
    return 4 * params + _BLOCK_OVERHEAD_BYTES * int(sum(blocks))


def small_init_std(kernel_size: int, out_channels: int) -> float:
    """The paper's standard deviation for a residual conv: ``1 / (k^2 c)`` with ``c`` output channels."""
    return 1.0 / (_positive_int(kernel_size, "kernel_size") ** 2 * _positive_int(out_channels, "out_channels"))


def printed_standard_init_std(kernel_size: int, out_channels: int) -> float:
    """The "standard" standard deviation as Section 4.1 prints it: ``1 / (k sqrt(c))``, ``c`` output channels."""
    return 1.0 / (_positive_int(kernel_size, "kernel_size") * math.sqrt(_positive_int(out_channels, "out_channels")))


def he_init_std(kernel_size: int, out_channels: int) -> float:
    """He/Kaiming standard deviation (fan-out, ReLU gain): ``sqrt(2 / (k^2 c))``."""
    return math.sqrt(
        2.0 / (_positive_int(kernel_size, "kernel_size") ** 2 * _positive_int(out_channels, "out_channels"))
    )


class ResidualBlock(nn.Module):
    """``x + C2(relu(C1 x))``; C1 carries the stride. With ``skip=False``: ``C2(relu(C1 x))`` only.

    When the block changes the shape, the shortcut is average pooling (window and stride ``stride``,
    rounding up like the strided conv does) followed by zero padding of the extra channels.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        stride: int = 1,
        kernel_size: int = 3,
        skip: bool = True,
        bias: bool = True,
    ):
        super().__init__()
        _positive_int(in_channels, "in_channels")
        _positive_int(out_channels, "out_channels")
        _positive_int(stride, "stride")
        _positive_int(kernel_size, "kernel_size")
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd so that 'same' padding exists, got {kernel_size}")
        if skip and out_channels < in_channels:
            raise ValueError(
                f"a residual block cannot shrink channels ({in_channels} -> {out_channels}): "
                "the shortcut only pads with zeros"
            )
        self.in_channels, self.out_channels, self.stride, self.skip = in_channels, out_channels, stride, skip
        pad = kernel_size // 2
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=pad, bias=bias)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size, stride=1, padding=pad, bias=bias)

    def shortcut(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride > 1:
            x = F.avg_pool2d(x, self.stride, self.stride, ceil_mode=True)
        if self.out_channels > self.in_channels:
            x = F.pad(x, (0, 0, 0, 0, 0, self.out_channels - self.in_channels))
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch = self.conv2(F.relu(self.conv1(x)))
        if not self.skip:
            return branch
        return self.shortcut(x) + branch


class RandomProjection(nn.Module):
    """``logits = features @ weight.T`` with a random ``(num_classes, width)`` matrix.

    The matrix is a buffer (stored, moved with the model, never trained) unless ``trainable=True``.
    ``rank=r`` draws a random matrix of rank ``r`` instead (``u @ v`` with Gaussian ``u`` of shape
    ``(num_classes, r)`` and ``v`` of shape ``(r, width)``, scaled so that each entry has the variance of the
    full-rank matrix's): a degenerate head, for the ablation's control (with ``r = 1`` every image's logits lie
    on one line, so at most two classes can ever be predicted). ``None``, the default, is the full-rank matrix,
    drawn exactly as before the option existed.
    """

    def __init__(self, width: int, num_classes: int, trainable: bool = False, rank: int | None = None):
        super().__init__()
        num_classes, width = _positive_int(num_classes, "num_classes"), _positive_int(width, "width")
        if rank is None:
            weight = torch.randn(num_classes, width)
        else:
            rank = _positive_int(rank, "head_rank")
            if rank > min(num_classes, width):
                raise ValueError(
                    f"head_rank must be at most min(num_classes, width) = {min(num_classes, width)}, got {rank}"
                )
            weight = torch.randn(num_classes, rank) @ torch.randn(rank, width) / math.sqrt(rank)
        weight /= math.sqrt(width)
        self.rank = rank
        self.trainable = bool(trainable)
        if self.trainable:
            self.weight = nn.Parameter(weight)
        else:
            self.register_buffer("weight", weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)


class AllConvResNet(nn.Module):
    """Hardt & Ma's all-convolutional residual network (see the module docstring).

    Parameters
    ----------
    num_classes: outputs of the fixed random head (10 for CIFAR-10, 100 for CIFAR-100).
    in_channels: image channels (3 for CIFAR, 1 for the 8x8 digits).
    stem_channels: output channels of the 3x3 stem conv (16 in the paper).
    widths: channels of each stage (the paper: 64, 128, 256); must not decrease.
    blocks_per_stage: residual blocks per stage, one integer for all stages or one per stage (paper: 9).
    init: ``"small"`` (the paper's ``1/(k^2 c)``), ``"standard"`` (He) or ``"printed-standard"``
        (``1/(k sqrt(c))``, the standard deviation Section 4.1 calls standard).
    skip: ``False`` removes every identity path (a plain network of the same depth).
    trainable_head: make the random projection a trained parameter instead of a fixed buffer.
    head_rank: ``None`` (the paper's full-rank projection) or the rank of a degenerate random head
        (:class:`RandomProjection`; the ablation's control).
    kernel_size: of every convolution (odd).
    bias: give every convolution a bias (initialised to zero).

    The weights are drawn from PyTorch's global generator: call ``torch.manual_seed`` first for a
    reproducible network.
    """

    def __init__(
        self,
        num_classes: int = 10,
        in_channels: int = 3,
        stem_channels: int = 16,
        widths: Sequence[int] = (64, 128, 256),
        blocks_per_stage: int | Sequence[int] = 9,
        init: str = "small",
        skip: bool = True,
        trainable_head: bool = False,
        kernel_size: int = 3,
        bias: bool = True,
        head_rank: int | None = None,
    ):
        super().__init__()
        num_classes = _positive_int(num_classes, "num_classes")
        in_channels = _positive_int(in_channels, "in_channels")
        stem_channels = _positive_int(stem_channels, "stem_channels")
        kernel_size = _positive_int(kernel_size, "kernel_size")
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd so that 'same' padding exists, got {kernel_size}")
        skip, trainable_head, bias = _flag(skip, "skip"), _flag(trainable_head, "trainable_head"), _flag(bias, "bias")
        widths = tuple(_positive_int(w, "every stage width") for w in widths)
        if not widths:
            raise ValueError("widths must list at least one stage width")
        if isinstance(blocks_per_stage, (numbers.Integral, float)):
            blocks = (_positive_int(blocks_per_stage, "blocks_per_stage"),) * len(widths)
        else:
            blocks = tuple(_positive_int(b, "every entry of blocks_per_stage") for b in blocks_per_stage)
            if len(blocks) != len(widths):
                raise ValueError(f"blocks_per_stage has {len(blocks)} entries but there are {len(widths)} stages")
        if skip:
            chain = (stem_channels,) + widths
            if any(b < a for a, b in zip(chain, chain[1:])):
                raise ValueError(
                    f"stage widths must not decrease from the stem ({stem_channels}) on, got {widths}: "
                    "the shortcut can only pad channels with zeros"
                )
        init = validate.choice("init", init, INITS)
        validate.check_budget(
            "blocks_per_stage",
            estimate_model_bytes(in_channels, stem_channels, widths, blocks, kernel_size, num_classes),
            validate.memory_limit_bytes(),
            value=blocks_per_stage,
        )
        self.num_classes, self.in_channels, self.stem_channels = num_classes, in_channels, stem_channels
        self.widths, self.blocks_per_stage, self.kernel_size = widths, blocks, kernel_size
        self.init, self.skip, self.trainable_head = init, bool(skip), bool(trainable_head)

        self.stem = nn.Conv2d(in_channels, stem_channels, kernel_size, padding=kernel_size // 2, bias=bias)
        stages = []
        channels = stem_channels
        for index, (width, count) in enumerate(zip(widths, blocks)):
            layers = []
            for j in range(count):
                stride = 2 if (index > 0 and j == 0) else 1
                layers.append(ResidualBlock(channels, width, stride, kernel_size, skip=skip, bias=bias))
                channels = width
            stages.append(nn.Sequential(*layers))
        self.stages = nn.ModuleList(stages)
        self.head = RandomProjection(channels, num_classes, trainable=trainable_head, rank=head_rank)
        self.head_rank = self.head.rank
        self.reset_parameters()

    def residual_convs(self) -> list[nn.Conv2d]:
        """C1 and C2 of every block, in order."""
        return [conv for stage in self.stages for block in stage for conv in (block.conv1, block.conv2)]

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Draw the weights as the module docstring describes (biases to zero)."""
        k = self.kernel_size
        nn.init.normal_(self.stem.weight, 0.0, he_init_std(k, self.stem.out_channels))
        std_of = {"small": small_init_std, "standard": he_init_std, "printed-standard": printed_standard_init_std}[
            self.init
        ]
        for conv in self.residual_convs():
            nn.init.normal_(conv.weight, 0.0, std_of(k, conv.out_channels))
        for conv in [self.stem, *self.residual_convs()]:
            if conv.bias is not None:
                conv.bias.zero_()

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The pooled features, ``(N, width)``, before the head."""
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"expected a float batch of shape (N, {self.in_channels}, H, W), got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise ValueError(f"expected a floating-point batch (normalise uint8 images first), got {x.dtype}")
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return x.mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _as_module(model) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected a torch.nn.Module, got {type(model).__name__}")
    return getattr(model, "_orig_mod", model)  # unwrap torch.compile


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of trainable parameters; with ``trainable_only=False``, every stored number:
    all parameters (trained or frozen) plus all buffers (e.g. the fixed random head)."""
    model = _as_module(model)
    if trainable_only:
        return sum(p.numel() for p in model.parameters() if p.requires_grad)
    return sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())


def conv_weight_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The weights (not biases) of every convolution: what the paper applies weight decay to."""
    return [m.weight for m in _as_module(model).modules() if isinstance(m, nn.Conv2d)]


def parameter_breakdown(model: nn.Module) -> dict[str, int]:
    """Stored numbers by kind: conv weights, conv biases, head (trainable or fixed), other, trainable total."""
    model = _as_module(model)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    out = {
        "conv_weights": sum(c.weight.numel() for c in convs),
        "conv_biases": sum(c.bias.numel() for c in convs if c.bias is not None),
    }
    heads = [m for m in model.modules() if isinstance(m, RandomProjection)]
    out["head_trainable"] = sum(h.weight.numel() for h in heads if h.trainable)
    out["head_fixed"] = sum(h.weight.numel() for h in heads if not h.trainable)
    out["trainable"] = count_parameters(model, trainable_only=True)
    out["other_trainable"] = out["trainable"] - out["conv_weights"] - out["conv_biases"] - out["head_trainable"]
    return out


def _check_input_shape(input_shape) -> tuple[int, int, int]:
    if not isinstance(input_shape, (tuple, list, torch.Size)):
        raise TypeError(f"input_shape must be a tuple (channels, height, width), got {input_shape!r}")
    if len(input_shape) != 3:
        raise ValueError(f"input_shape must be (channels, height, width), got {input_shape!r}")
    return tuple(validate.positive_int(f"input_shape[{i}]", s) for i, s in enumerate(input_shape))


def _meta_forward(model: nn.Module, input_shape, select, hook) -> None:
    """Run ``model`` on a (1, *input_shape) batch on the meta device (shapes only, no arithmetic), with
    ``hook`` on the modules ``select(meta_copy)`` returns, in that order."""
    meta = copy.deepcopy(model).to("meta")
    handles = [m.register_forward_hook(hook) for m in select(meta)]
    try:
        with torch.no_grad():
            meta(torch.zeros((1, *input_shape), device="meta"))
    finally:
        for h in handles:
            h.remove()


def flops_per_image(model: nn.Module, input_shape: Sequence[int] = (3, 32, 32)) -> int:
    """Forward FLOPs for one image: 2 per multiply-add of every convolution, linear layer and random head.

    Counted by forward hooks on a meta-device copy (no arithmetic is done). Elementwise operations are
    not counted (see the module docstring).
    """
    model = _as_module(model)
    shape = _check_input_shape(input_shape)
    total = 0

    def hook(module, inputs, output):
        nonlocal total
        if isinstance(module, nn.Conv2d):
            per_output = (module.in_channels // module.groups) * math.prod(module.kernel_size)
            total += 2 * per_output * output[0].numel()
        else:  # nn.Linear or RandomProjection: one multiply-add per weight entry per input row
            rows = inputs[0].numel() // inputs[0].shape[-1]
            total += 2 * module.weight.numel() * rows

    counted = (nn.Conv2d, nn.Linear, RandomProjection)
    _meta_forward(model, shape, lambda meta: [m for m in meta.modules() if isinstance(m, counted)], hook)
    return total


def training_flops_per_image(model: nn.Module, input_shape: Sequence[int] = (3, 32, 32)) -> int:
    """Estimated FLOPs of one training step per image: 3x the forward count (forward + two backward
    products per layer)."""
    return 3 * flops_per_image(model, input_shape)


def architecture_table(model: AllConvResNet, input_shape: Sequence[int] = (3, 32, 32)) -> list[dict]:
    """One row per part of the network, for the chapter to render.

    Keys: ``stage`` (name), ``blocks``, ``in_channels``, ``out_channels``, ``stride`` (of the first block;
    ``None`` for the pool and the head), ``output_size`` ("HxW", or the number of outputs), ``parameters``
    (trainable) and ``fixed`` (stored, never trained: the random head).
    """
    model = _as_module(model)
    if not isinstance(model, AllConvResNet):
        raise TypeError(f"architecture_table needs an AllConvResNet, got {type(model).__name__}")
    shape = _check_input_shape(input_shape)
    if shape[0] != model.in_channels:
        raise ValueError(f"input_shape has {shape[0]} channels but the model takes {model.in_channels}")
    sizes: list[tuple[int, int]] = []

    def hook(module, inputs, output):
        sizes.append(tuple(output.shape[2:]))

    _meta_forward(model, shape, lambda meta: [meta.stem, *meta.stages], hook)

    def trainable(module):
        return sum(p.numel() for p in module.parameters() if p.requires_grad)

    def size(i):
        h, w = sizes[i]
        return f"{h}x{w}"

    rows = [
        dict(
            stage="stem",
            blocks=1,
            in_channels=model.in_channels,
            out_channels=model.stem_channels,
            stride=1,
            output_size=size(0),
            parameters=trainable(model.stem),
            fixed=0,
        )
    ]
    for i, stage in enumerate(model.stages):
        first = stage[0]
        rows.append(
            dict(
                stage=f"stage {i + 1}",
                blocks=len(stage),
                in_channels=first.in_channels,
                out_channels=stage[-1].out_channels,
                stride=first.stride,
                output_size=size(i + 1),
                parameters=trainable(stage),
                fixed=0,
            )
        )
    width = model.head.weight.shape[1]
    rows.append(
        dict(
            stage="global average pool",
            blocks=0,
            in_channels=width,
            out_channels=width,
            stride=None,
            output_size="1x1",
            parameters=0,
            fixed=0,
        )
    )
    head_size = model.head.weight.numel()
    rows.append(
        dict(
            stage="head (trainable projection)" if model.trainable_head else "head (fixed random projection)",
            blocks=0,
            in_channels=width,
            out_channels=model.num_classes,
            stride=None,
            output_size=str(model.num_classes),
            parameters=head_size if model.trainable_head else 0,
            fixed=0 if model.trainable_head else head_size,
        )
    )
    return rows

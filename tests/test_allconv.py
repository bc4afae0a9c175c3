"""Tests for resnet_theory.engine.allconv: Hardt & Ma's all-convolutional residual network (ICLR 2017, Section 4)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from resnet_theory.engine.allconv import (
    CIFAR10_CONV_WEIGHTS,
    PAPER_TRAINABLE_PARAMETERS,
    SMALL_CONFIG,
    AllConvResNet,
    RandomProjection,
    ResidualBlock,
    architecture_table,
    conv_weight_parameters,
    count_parameters,
    flops_per_image,
    he_init_std,
    parameter_breakdown,
    printed_standard_init_std,
    small_init_std,
    training_flops_per_image,
)


@pytest.fixture(scope="module")
def cifar10():
    torch.manual_seed(0)
    return AllConvResNet(num_classes=10)


def small_model(**kwargs):
    torch.manual_seed(1)
    return AllConvResNet(**{**SMALL_CONFIG, **kwargs})


# --- parameters --------------------------------------------------------------------------------------
def test_cifar10_parameter_count_matches_the_paper(cifar10):
    parts = parameter_breakdown(cifar10)
    assert parts["conv_weights"] == CIFAR10_CONV_WEIGHTS == 13_538_736
    # one bias per output channel: stem 16, then 18 convs at each of 64, 128, 256 channels
    assert parts["conv_biases"] == 16 + 18 * (64 + 128 + 256) == 8_080
    assert parts["head_fixed"] == 256 * 10 and parts["head_trainable"] == 0 and parts["other_trainable"] == 0
    trainable = count_parameters(cifar10)
    assert trainable == 13_538_736 + 8_080 == 13_546_816
    assert abs(trainable - PAPER_TRAINABLE_PARAMETERS) / PAPER_TRAINABLE_PARAMETERS < 0.01
    assert count_parameters(cifar10, trainable_only=False) == trainable + 2_560


def test_conv_weight_count_by_hand():
    # 3x3 convs: stem 3->16, then per stage C1 (in->w) + C2 (w->w) + 8 blocks of two w->w convs
    by_hand = 9 * (
        3 * 16
        + (16 * 64 + 64 * 64 + 16 * 64 * 64)
        + (64 * 128 + 128 * 128 + 16 * 128 * 128)
        + (128 * 256 + 256 * 256 + 16 * 256 * 256)
    )
    assert by_hand == CIFAR10_CONV_WEIGHTS


def test_bias_free_and_cifar100_counts():
    torch.manual_seed(0)
    model = AllConvResNet(num_classes=100, bias=False, blocks_per_stage=1)
    parts = parameter_breakdown(model)
    assert parts["conv_biases"] == 0 and parts["head_fixed"] == 25_600
    assert (
        count_parameters(model)
        == parts["conv_weights"]
        == 9 * (3 * 16 + 16 * 64 + 64 * 64 + 64 * 128 + 128 * 128 + 128 * 256 + 256 * 256)
    )


def test_conv_weight_parameters_are_weights_only(cifar10):
    weights = conv_weight_parameters(cifar10)
    assert len(weights) == 1 + 2 * 27 == 55  # the paper's "55 convolutions"
    assert sum(w.numel() for w in weights) == CIFAR10_CONV_WEIGHTS
    assert all(w.dim() == 4 for w in weights)


# --- initialisation ------------------------------------------------------------------------------------
def test_small_init_statistics(cifar10):
    convs = cifar10.residual_convs()
    assert len(convs) == 54
    for conv in convs:
        k, c = conv.kernel_size[0], conv.out_channels
        w = conv.weight.detach()
        target = 1.0 / (k * k * c)
        assert small_init_std(k, c) == pytest.approx(target)
        # >= 9,216 weights each: the std estimate is within 1% at one sigma; 5% is > 6 sigma
        assert w.std().item() == pytest.approx(target, rel=0.05)
        assert abs(w.mean().item()) < 5 * target / math.sqrt(w.numel())
        assert torch.count_nonzero(conv.bias) == 0
    assert cifar10.stem.weight.std().item() == pytest.approx(math.sqrt(2 / (9 * 16)), rel=0.2)


def test_standard_init_statistics():
    torch.manual_seed(2)
    model = AllConvResNet(init="standard", blocks_per_stage=1)
    for conv in model.residual_convs():
        k, c = conv.kernel_size[0], conv.out_channels
        assert he_init_std(k, c) == pytest.approx(math.sqrt(2 / (k * k * c)))
        assert conv.weight.std().item() == pytest.approx(math.sqrt(2 / (k * k * c)), rel=0.05)


def test_printed_standard_init_statistics():
    """Section 4.1's 'standard' 1/(k sqrt c): He's without the sqrt 2, and k sqrt(c) times the small one."""
    torch.manual_seed(3)
    model = AllConvResNet(init="printed-standard", blocks_per_stage=1)
    for conv in model.residual_convs():
        k, c = conv.kernel_size[0], conv.out_channels
        assert printed_standard_init_std(k, c) == pytest.approx(he_init_std(k, c) / math.sqrt(2))
        assert printed_standard_init_std(k, c) == pytest.approx(k * math.sqrt(c) * small_init_std(k, c))
        assert conv.weight.std().item() == pytest.approx(1 / (k * math.sqrt(c)), rel=0.05)
    with pytest.raises(ValueError, match="out_channels"):
        printed_standard_init_std(3, 0)
    with pytest.raises(ValueError, match="init"):
        AllConvResNet(init="Printed-Standard")


def test_seed_makes_the_network_reproducible():
    a, b = small_model(), small_model()
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and torch.equal(pa, pb)


# --- structure and forward -----------------------------------------------------------------------------
def test_cifar_forward_shapes(cifar10):
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert cifar10(x).shape == (1, 10)
        assert cifar10.features(x).shape == (1, 256)
    torch.manual_seed(0)
    cifar100 = AllConvResNet(num_classes=100, blocks_per_stage=1)
    with torch.no_grad():
        assert cifar100(x).shape == (1, 100)


def test_numpy_integers_are_accepted():
    import numpy as np

    torch.manual_seed(0)
    model = AllConvResNet(
        num_classes=np.int64(3), in_channels=1, widths=np.array([16, 32]), blocks_per_stage=np.int64(2)
    )
    assert model.blocks_per_stage == (2, 2) and model(torch.randn(1, 1, 8, 8)).shape == (1, 3)


def test_digits_forward_shape():
    model = small_model()
    out = model(torch.randn(5, 1, 8, 8))
    assert out.shape == (5, 10) and torch.isfinite(out).all()


@settings(max_examples=10, deadline=None)
@given(
    widths=st.lists(st.sampled_from([4, 8, 12]), min_size=1, max_size=3).map(sorted),
    blocks=st.integers(1, 2),
    size=st.integers(3, 11),
    classes=st.integers(1, 7),
    k=st.sampled_from([1, 3, 5]),
    skip=st.booleans(),
)
def test_forward_shapes_for_any_configuration(widths, blocks, size, classes, k, skip):
    torch.manual_seed(0)
    model = AllConvResNet(
        num_classes=classes,
        in_channels=2,
        stem_channels=4,
        widths=widths,
        blocks_per_stage=blocks,
        kernel_size=k,
        skip=skip,
    )
    with torch.no_grad():
        out = model(torch.randn(3, 2, size, size))  # odd sizes too: shortcut and strided conv agree
    assert out.shape == (3, classes)
    table = architecture_table(model, (2, size, size))
    expected = size
    for row in table[1 : 1 + len(widths)]:
        expected = math.ceil(expected / row["stride"])
        assert row["output_size"] == f"{expected}x{expected}"


ALLOWED_MODULES = (AllConvResNet, nn.Conv2d, ResidualBlock, nn.Sequential, nn.ModuleList, RandomProjection)


def test_no_normalisation_dropout_or_max_pool(cifar10):
    forbidden = (
        nn.modules.batchnorm._NormBase,
        nn.GroupNorm,
        nn.LayerNorm,
        nn.LocalResponseNorm,
        nn.modules.dropout._DropoutNd,
        nn.MaxPool1d,
        nn.MaxPool2d,
        nn.MaxPool3d,
    )
    for name, module in cifar10.named_modules():
        assert not isinstance(module, forbidden), name
        assert type(module) in ALLOWED_MODULES, f"{name}: unexpected layer {type(module).__name__}"
    assert not any("norm" in n or "running" in n for n in cifar10.state_dict())


def test_fixed_head_is_a_buffer_without_gradient():
    model = small_model()
    assert "head.weight" in dict(model.named_buffers())
    assert "head.weight" not in dict(model.named_parameters())
    before = model.head.weight.clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for _ in range(2):
        loss = nn.functional.cross_entropy(model(torch.randn(8, 1, 8, 8)), torch.arange(8) % 10)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert model.head.weight.grad is None and not model.head.weight.requires_grad
    assert torch.equal(model.head.weight, before)
    assert model.stem.weight.grad is not None  # the rest does train


def test_trainable_head_receives_gradient():
    model = small_model(trainable_head=True)
    assert "head.weight" in dict(model.named_parameters())
    assert "head.weight" not in dict(model.named_buffers())
    nn.functional.cross_entropy(model(torch.randn(8, 1, 8, 8)), torch.arange(8) % 10).backward()
    assert model.head.weight.grad is not None and model.head.weight.grad.abs().sum() > 0
    assert count_parameters(model) == count_parameters(small_model()) + 64 * 10


def test_the_default_head_is_drawn_as_before_the_rank_option():
    """``head_rank=None`` draws exactly the matrix the head always drew (``randn(classes, width) / sqrt(width)``
    from the global generator), so every earlier run's network is unchanged."""
    torch.manual_seed(3)
    expected = torch.randn(10, 64) / 64**0.5
    torch.manual_seed(3)
    assert torch.equal(RandomProjection(64, 10).weight, expected)
    torch.manual_seed(3)
    assert torch.equal(RandomProjection(64, 10, rank=None).weight, expected)


@pytest.mark.parametrize("rank", [1, 2, 10])
def test_a_degenerate_head_has_its_rank_and_the_full_heads_scale(rank):
    torch.manual_seed(0)
    weights = torch.stack([RandomProjection(64, 10, rank=rank).weight for _ in range(2000)])
    assert all(torch.linalg.matrix_rank(w) == rank for w in weights[:5])
    # each entry has the full-rank head's variance, 1 / width, within 5% (2,000 heads at seed 0)
    assert weights.var().item() == pytest.approx(1 / 64, rel=0.05)
    model = small_model(head_rank=rank)
    assert model.head_rank == rank and "head.weight" in dict(model.named_buffers())


def test_bad_head_ranks_are_refused():
    with pytest.raises(ValueError, match="head_rank must be at most min"):
        RandomProjection(64, 10, rank=11)
    with pytest.raises(ValueError, match="head_rank"):
        RandomProjection(64, 10, rank=0)
    with pytest.raises(TypeError, match="head_rank"):
        RandomProjection(64, 10, rank=1.5)


def _zero_residual_convs(model):
    with torch.no_grad():
        for conv in model.residual_convs():
            conv.weight.zero_()
            conv.bias.zero_()


def test_plain_network_has_no_identity_path():
    residual, plain = small_model(), small_model(skip=False)
    # same layers, same parameters (same seed): only the wiring differs
    for (na, pa), (nb, pb) in zip(residual.state_dict().items(), plain.state_dict().items()):
        assert na == nb and torch.equal(pa, pb)
    _zero_residual_convs(residual)
    _zero_residual_convs(plain)
    x = torch.randn(4, 1, 8, 8, requires_grad=True)
    out_plain = plain(x)
    assert torch.count_nonzero(out_plain) == 0  # nothing reaches the output but through the convs
    out_plain.sum().backward()
    assert torch.count_nonzero(x.grad) == 0
    # the residual network with zero branches is stem -> identity (zero-padded to 64 channels) -> pool -> head
    with torch.no_grad():
        expected = residual.head(nn.functional.pad(residual.stem(x).mean(dim=(2, 3)), (0, 64 - 16)))
        assert torch.allclose(residual(x), expected, atol=1e-6)
        assert torch.count_nonzero(expected) > 0


def test_shortcut_pools_and_pads_with_zeros():
    block = ResidualBlock(2, 5, stride=2)
    with torch.no_grad():
        block.conv1.weight.zero_()
        block.conv2.weight.zero_()
        block.conv1.bias.zero_()
        block.conv2.bias.zero_()
    x = torch.arange(2 * 4 * 4, dtype=torch.float32).reshape(1, 2, 4, 4)
    out = block(x)
    assert out.shape == (1, 5, 2, 2)
    # channel 0, top-left 2x2 window: 0, 1, 4, 5
    assert out[0, 0, 0, 0].item() == pytest.approx((0 + 1 + 4 + 5) / 4)
    assert out[0, 1, 1, 1].item() == pytest.approx((26 + 27 + 30 + 31) / 4)
    assert torch.count_nonzero(out[:, 2:]) == 0


# --- FLOPs -----------------------------------------------------------------------------------------------
def test_flops_of_one_block_by_hand():
    block = ResidualBlock(64, 128, stride=2)
    # 32x32 input, stride 2: both convs produce 128 x 16 x 16 outputs
    c1 = 2 * (16 * 16 * 128) * (64 * 3 * 3)  # 37,748,736
    c2 = 2 * (16 * 16 * 128) * (128 * 3 * 3)  # 75,497,472
    assert flops_per_image(block, (64, 32, 32)) == c1 + c2 == 113_246_208
    same = ResidualBlock(64, 64)
    assert flops_per_image(same, (64, 32, 32)) == 2 * 2 * (32 * 32 * 64) * (64 * 9) == 150_994_944


@settings(max_examples=20, deadline=None)
@given(
    cin=st.integers(1, 16),
    extra=st.integers(0, 16),
    stride=st.integers(1, 3),
    size=st.integers(1, 12),
    k=st.sampled_from([1, 3, 5]),
)
def test_block_flops_formula(cin, extra, stride, size, k):
    cout = cin + extra
    out_size = math.ceil(size / stride)
    expected = 2 * out_size * out_size * cout * k * k * (cin + cout)
    assert flops_per_image(ResidualBlock(cin, cout, stride, kernel_size=k), (cin, size, size)) == expected


def test_network_flops_by_hand(cifar10):
    def conv(size, cin, cout):
        return 2 * size * size * cout * cin * 9

    stage_flops = 0
    for size, cin, w in ((32, 16, 64), (16, 64, 128), (8, 128, 256)):
        stage_flops += conv(size, cin, w) + conv(size, w, w) + 16 * conv(size, w, w)
    expected = conv(32, 3, 16) + stage_flops + 2 * 256 * 10
    assert flops_per_image(cifar10) == expected == 3_945_632_768
    assert training_flops_per_image(cifar10) == 3 * expected
    assert next(cifar10.parameters()).device.type == "cpu"  # counting used a copy


def test_flops_ignore_the_model_state():
    a = small_model()
    b = small_model(init="standard", skip=False, trainable_head=True)
    assert flops_per_image(a, (1, 8, 8)) == flops_per_image(b, (1, 8, 8)) > 0


def test_architecture_table(cifar10):
    rows = architecture_table(cifar10)
    assert [r["stage"] for r in rows] == [
        "stem",
        "stage 1",
        "stage 2",
        "stage 3",
        "global average pool",
        "head (fixed random projection)",
    ]
    assert [r["output_size"] for r in rows] == ["32x32", "32x32", "16x16", "8x8", "1x1", "10"]
    assert [r["stride"] for r in rows] == [1, 1, 2, 2, None, None]
    assert [r["out_channels"] for r in rows] == [16, 64, 128, 256, 256, 10]
    assert [r["blocks"] for r in rows[1:4]] == [9, 9, 9]
    assert sum(r["parameters"] for r in rows) == count_parameters(cifar10)
    assert sum(r["fixed"] for r in rows) == 2_560
    digits = architecture_table(small_model(trainable_head=True), (1, 8, 8))
    assert [r["output_size"] for r in digits[:4]] == ["8x8", "8x8", "4x4", "2x2"]
    assert digits[-1]["parameters"] == 640 and digits[-1]["stage"] == "head (trainable projection)"


# --- bad input ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_classes=0), "num_classes"),
        (dict(in_channels=-1), "in_channels"),
        (dict(widths=()), "at least one"),
        (dict(widths=(64, 32)), "must not decrease"),
        (dict(stem_channels=128), "must not decrease"),
        (dict(widths=(64, 0)), "width"),
        (dict(blocks_per_stage=0), "blocks_per_stage"),
        (dict(blocks_per_stage=(1, 2)), "3 stages"),
        (dict(init="xavier"), "init must be one of"),
        (dict(kernel_size=2), "odd"),
    ],
)
def test_bad_model_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AllConvResNet(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_classes=2.5), "num_classes must be a positive integer"),
        (dict(blocks_per_stage=1.0), "blocks_per_stage must be a positive integer"),
        (dict(widths=(64, 128, None)), "width must be a positive integer"),
        (dict(skip="yes"), "skip must be True or False"),
        (dict(skip=1), "skip must be True or False"),
        (dict(init=3), "init must be one of"),
    ],
)
def test_wrong_types_are_type_errors(kwargs, message):
    with pytest.raises(TypeError, match=message):
        AllConvResNet(**kwargs)


def test_numpy_scalars_are_accepted():
    import numpy as np

    model = AllConvResNet(
        num_classes=np.int64(2),
        in_channels=1,
        stem_channels=4,
        widths=(np.int32(4),),
        blocks_per_stage=np.int64(1),
        skip=np.True_,
    )
    assert model.num_classes == 2 and model.skip is True


def test_huge_models_are_refused_up_front_with_the_estimate():
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"blocks_per_stage=10000000 needs about .* TB of memory"):
        AllConvResNet(blocks_per_stage=10**7)
    assert time.perf_counter() - start < 1.0


def test_bad_block_arguments():
    with pytest.raises(ValueError, match="cannot shrink"):
        ResidualBlock(8, 4)
    with pytest.raises(ValueError, match="odd"):
        ResidualBlock(4, 4, kernel_size=4)
    with pytest.raises(ValueError, match="stride"):
        ResidualBlock(4, 4, stride=0)
    ResidualBlock(8, 4, skip=False)  # a plain block may shrink
    with pytest.raises(ValueError, match="positive integer"):
        small_init_std(0, 4)
    with pytest.raises(ValueError, match="positive integer"):
        he_init_std(3, -1)
    with pytest.raises(ValueError, match="num_classes"):
        RandomProjection(4, 0)


def test_bad_forward_input():
    model = small_model()
    with pytest.raises(ValueError, match=r"\(N, 1, H, W\)"):
        model(torch.randn(2, 3, 8, 8))
    with pytest.raises(ValueError, match=r"\(N, 1, H, W\)"):
        model(torch.randn(1, 8, 8))
    with pytest.raises(ValueError, match="floating-point"):
        model(torch.zeros(2, 1, 8, 8, dtype=torch.uint8))


def test_bad_helper_arguments():
    model = small_model()
    for fn in (count_parameters, flops_per_image, architecture_table, parameter_breakdown, conv_weight_parameters):
        with pytest.raises(TypeError, match="torch.nn.Module"):
            fn("not a model")
    for shape in [(8, 8), (1, 8, 0)]:
        with pytest.raises(ValueError, match="input_shape"):
            flops_per_image(model, shape)
    for shape in [(1, 8, 8.0), "188", None]:
        with pytest.raises(TypeError, match="input_shape"):
            flops_per_image(model, shape)
    with pytest.raises(TypeError, match="AllConvResNet"):
        architecture_table(ResidualBlock(4, 4), (4, 8, 8))
    with pytest.raises(ValueError, match="channels"):
        architecture_table(model, (3, 8, 8))

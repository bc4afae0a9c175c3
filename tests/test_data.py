"""Tests for resnet_theory.data: digits, CIFAR binary archives, device-resident batches and augmentation."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resnet_theory.data import (
    DeviceData, augment_batch, crop_and_flip, draw_augmentation, load_digits_images)


# --- digits ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    return load_digits_images()


def test_digits_split_shapes_and_values(digits):
    from sklearn.datasets import load_digits

    (x_train, y_train), (x_test, y_test) = digits["train"], digits["test"]
    assert x_train.shape == (1437, 1, 8, 8) and x_test.shape == (360, 1, 8, 8)
    assert x_train.dtype == np.uint8 and y_train.dtype == np.int64 and y_test.dtype == np.int64
    assert y_train.shape == (1437,) and y_test.shape == (360,)
    assert x_train.min() == 0 and x_train.max() == 255
    raw = load_digits()
    # the two splits together are the whole dataset, each image rescaled from 0..16 to 0..255
    rescaled = np.rint(raw.images * 255 / 16).astype(np.uint8).reshape(len(raw.images), -1)
    ours = np.concatenate([x_train, x_test]).reshape(len(raw.images), -1)
    key = lambda imgs, labels: sorted(zip(map(bytes, imgs), labels.tolist()))  # noqa: E731
    assert key(ours, np.concatenate([y_train, y_test])) == key(rescaled, raw.target)


def test_digits_split_is_stratified_and_fixed(digits):
    counts_train = np.bincount(digits["train"][1], minlength=10)
    counts_test = np.bincount(digits["test"][1], minlength=10)
    fraction = counts_test / (counts_train + counts_test)
    assert np.all(np.abs(fraction - 0.2) < 0.01)
    again = load_digits_images()
    for split in ("train", "test"):
        assert np.array_equal(again[split][0], digits[split][0])
        assert np.array_equal(again[split][1], digits[split][1])


# --- DeviceData ----------------------------------------------------------------------------------------------
def test_device_data_normalises_per_channel():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(50, 3, 6, 6), dtype=np.uint8)
    images[:, 1] //= 4  # a darker channel
    data = DeviceData(images, np.arange(50) % 3, "cpu")
    assert data.images.dtype == torch.float32 and data.labels.dtype == torch.int64 and len(data) == 50
    per_channel = data.images.transpose(0, 1).reshape(3, -1)
    assert torch.allclose(per_channel.mean(1), torch.zeros(3), atol=1e-5)
    assert torch.allclose(per_channel.std(1), torch.ones(3), atol=1e-5)
    scaled = images / 255.0
    assert np.allclose(data.mean.numpy(), scaled.mean(axis=(0, 2, 3)), atol=1e-6)
    # the test split is normalised with the training statistics
    test = DeviceData(images[:10], np.zeros(10, dtype=np.int64), "cpu", mean=data.mean, std=data.std)
    assert torch.allclose(test.images, data.images[:10])


def test_batches_cover_the_split_once_and_are_reproducible():
    images = np.arange(23, dtype=np.uint8).repeat(4).reshape(23, 1, 2, 2)
    data = DeviceData(images, np.arange(23), "cpu")
    gen = torch.Generator().manual_seed(5)
    batches = list(data.batches(5, gen, augment=False, drop_last=False))
    assert [len(y) for _, y in batches] == [5, 5, 5, 5, 3]
    labels = torch.cat([y for _, y in batches])
    assert sorted(labels.tolist()) == list(range(23)) and labels.tolist() != list(range(23))
    for x, y in batches:  # images travel with their labels
        assert torch.equal(x, data.images[y])
    assert data.num_batches(5) == 4 and len(list(data.batches(5, gen))) == 4
    again = list(data.batches(5, torch.Generator().manual_seed(5), augment=False, drop_last=False))
    assert all(torch.equal(a[1], b[1]) for a, b in zip(batches, again))
    in_order = torch.cat([y for _, y in data.batches(5, shuffle=False, drop_last=False)])
    assert in_order.tolist() == list(range(23))


def test_start_batch_resumes_an_epoch_exactly():
    rng = np.random.default_rng(1)
    data = DeviceData(rng.integers(0, 256, (40, 2, 5, 5), dtype=np.uint8), np.arange(40), "cpu")
    gen = torch.Generator().manual_seed(3)
    saved = gen.get_state()
    full = list(data.batches(8, gen, augment=True, pad=2))
    after_full = gen.get_state()
    resumed_gen = torch.Generator()
    resumed_gen.set_state(saved)
    resumed = list(data.batches(8, resumed_gen, augment=True, pad=2, start_batch=3))
    assert len(resumed) == 2
    for (xa, ya), (xb, yb) in zip(full[3:], resumed):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert torch.equal(resumed_gen.get_state(), after_full)  # the next epoch starts the same way too


# --- augmentation -------------------------------------------------------------------------------------------
def test_augment_shapes_and_draw_order():
    x = torch.randn(16, 3, 32, 32)
    out, (rows, cols, flips) = augment_batch(x, torch.Generator().manual_seed(0), return_params=True)
    assert out.shape == x.shape and out.dtype == x.dtype
    g = torch.Generator().manual_seed(0)
    assert torch.equal(rows, torch.randint(0, 9, (16,), generator=g))
    assert torch.equal(cols, torch.randint(0, 9, (16,), generator=g))
    assert torch.equal(flips, torch.rand(16, generator=g) < 0.5)


def test_flip_only_mirrors_the_chosen_images():
    x = torch.randn(64, 2, 5, 7)
    out, (rows, cols, flips) = augment_batch(x, torch.Generator().manual_seed(1), pad=0, return_params=True)
    assert 0 < int(flips.sum()) < 64
    assert torch.equal(out[flips], x[flips].flip(-1))
    assert torch.equal(out[~flips], x[~flips])


def test_no_flip_when_disabled():
    x = torch.randn(64, 1, 8, 8)
    out, (_, _, flips) = augment_batch(x, torch.Generator().manual_seed(1), pad=0, flip=False, return_params=True)
    assert not flips.any() and torch.equal(out, x)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), c=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9), pad=st.integers(0, 4),
       flip=st.booleans(), seed=st.integers(0, 2**31))
def test_crop_is_a_window_of_the_padded_image(n, c, h, w, pad, flip, seed):
    x = torch.randn(n, c, h, w)
    out, (rows, cols, flips) = augment_batch(x, torch.Generator().manual_seed(seed), pad=pad, flip=flip,
                                             return_params=True)
    padded = torch.zeros(n, c, h + 2 * pad, w + 2 * pad)
    padded[:, :, pad:pad + h, pad:pad + w] = x
    for i in range(n):
        r, q = int(rows[i]), int(cols[i])
        assert 0 <= r <= 2 * pad and 0 <= q <= 2 * pad
        window = padded[i, :, r:r + h, q:q + w]
        assert torch.equal(out[i], window.flip(-1) if flips[i] else window)


def test_every_output_is_some_window_and_offsets_cover_the_range():
    # independent of the returned parameters: search all 9 windows (and mirrors) of a 1-pixel padding
    x = torch.randn(200, 1, 4, 4)
    out = augment_batch(x, torch.Generator().manual_seed(7), pad=1, flip=True)
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1))
    seen = set()
    for i in range(len(x)):
        matches = [(r, q, f) for r in range(3) for q in range(3) for f in (False, True)
                   if torch.equal(out[i], padded[i, :, r:r + 4, q:q + 4].flip(-1) if f
                                  else padded[i, :, r:r + 4, q:q + 4])]
        assert matches, f"image {i} is not a window of its padded image"
        seen.update(matches)
    assert {(r, q) for r, q, _ in seen} == {(r, q) for r in range(3) for q in range(3)}
    assert {f for _, _, f in seen} == {False, True}


def test_augmented_batches_from_device_data():
    digits = load_digits_images()
    data = DeviceData(*digits["train"], "cpu")
    gen = torch.Generator().manual_seed(0)
    x, y = next(iter(data.batches(128, gen, augment=True, pad=1, flip=False)))
    assert x.shape == (128, 1, 8, 8) and y.shape == (128,) and y.dtype == torch.int64


# --- bad input ---------------------------------------------------------------------------------------------
def test_bad_device_data_input():
    images = np.zeros((4, 1, 2, 2), dtype=np.uint8)
    images[0] = 1
    labels = np.arange(4)
    with pytest.raises(TypeError, match="uint8"):
        DeviceData(images.astype(np.float32), labels)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        DeviceData(images[:, 0], labels)
    with pytest.raises(ValueError, match="4 images but 3 labels"):
        DeviceData(images, labels[:3])
    with pytest.raises(ValueError, match="integer"):
        DeviceData(images, labels.astype(float))
    with pytest.raises(ValueError, match="non-negative"):
        DeviceData(images, labels - 1)
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        DeviceData(images.tolist(), labels)
    with pytest.raises(ValueError, match="one entry per channel"):
        DeviceData(images, labels, mean=[0.1, 0.2])
    with pytest.raises(ValueError, match="std must be positive"):
        DeviceData(np.zeros((4, 1, 2, 2), dtype=np.uint8), labels)
    data = DeviceData(images, labels)
    with pytest.raises(ValueError, match="batch_size"):
        data.batches(0, torch.Generator())
    with pytest.raises(ValueError, match="needs a torch.Generator"):
        data.batches(2)
    with pytest.raises(TypeError, match="torch.Generator"):
        data.batches(2, generator=0)
    with pytest.raises(ValueError, match="start_batch"):
        data.batches(2, torch.Generator(), start_batch=3)


def test_bad_augmentation_input():
    gen = torch.Generator()
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        augment_batch(torch.zeros(3, 4, 4), gen)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        augment_batch(np.zeros((1, 1, 4, 4)), gen)
    with pytest.raises(ValueError, match="pad"):
        augment_batch(torch.zeros(1, 1, 4, 4), gen, pad=-1)
    with pytest.raises(TypeError, match="torch.Generator"):
        augment_batch(torch.zeros(1, 1, 4, 4), None)
    with pytest.raises(ValueError, match="batch_size"):
        draw_augmentation(-1, gen)
    with pytest.raises(ValueError, match=r"rows must have shape \(2,\)"):
        crop_and_flip(torch.zeros(2, 1, 4, 4), torch.zeros(3, dtype=torch.long), torch.zeros(2, dtype=torch.long),
                      torch.zeros(2, dtype=torch.bool), pad=1)

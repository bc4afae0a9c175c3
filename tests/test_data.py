"""Tests for resnet_theory.engine.data: digits, CIFAR binary archives, device-resident batches and augmentation."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resnet_theory.engine.data import DeviceData, augment_batch, crop_and_flip, draw_augmentation, load_digits_images


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


def test_digits_split_is_bitwise_scikit_learns_train_test_split(digits):
    """The split is read and drawn without importing scikit-learn (a second of CPU time in every training
    process), and is exactly what scikit-learn's loader and stratified split give."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    raw = load_digits()
    images = np.rint(raw.images * (255.0 / 16.0)).astype(np.uint8)[:, None, :, :]
    expected = train_test_split(images, raw.target.astype(np.int64), test_size=0.2, stratify=raw.target, random_state=0)
    got = (digits["train"][0], digits["test"][0], digits["train"][1], digits["test"][1])
    for ours, theirs in zip(got, expected):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


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
@given(
    n=st.integers(1, 6),
    c=st.integers(1, 3),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    pad=st.integers(0, 4),
    flip=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_crop_is_a_window_of_the_padded_image(n, c, h, w, pad, flip, seed):
    x = torch.randn(n, c, h, w)
    out, (rows, cols, flips) = augment_batch(
        x, torch.Generator().manual_seed(seed), pad=pad, flip=flip, return_params=True
    )
    padded = torch.zeros(n, c, h + 2 * pad, w + 2 * pad)
    padded[:, :, pad : pad + h, pad : pad + w] = x
    for i in range(n):
        r, q = int(rows[i]), int(cols[i])
        assert 0 <= r <= 2 * pad and 0 <= q <= 2 * pad
        window = padded[i, :, r : r + h, q : q + w]
        assert torch.equal(out[i], window.flip(-1) if flips[i] else window)


def test_every_output_is_some_window_and_offsets_cover_the_range():
    # independent of the returned parameters: search all 9 windows (and mirrors) of a 1-pixel padding
    x = torch.randn(200, 1, 4, 4)
    out = augment_batch(x, torch.Generator().manual_seed(7), pad=1, flip=True)
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1))
    seen = set()
    for i in range(len(x)):
        matches = [
            (r, q, f)
            for r in range(3)
            for q in range(3)
            for f in (False, True)
            if torch.equal(
                out[i], padded[i, :, r : r + 4, q : q + 4].flip(-1) if f else padded[i, :, r : r + 4, q : q + 4]
            )
        ]
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
    # the same seed draws the same permutation first, so the unaugmented batch holds the same images
    plain, labels = next(iter(data.batches(128, torch.Generator().manual_seed(0))))
    assert torch.equal(y, labels)
    padded = torch.nn.functional.pad(plain, (1, 1, 1, 1))
    for i in range(128):
        assert any(torch.equal(x[i], padded[i, :, r : r + 8, q : q + 8]) for r in range(3) for q in range(3)), i
    assert not torch.equal(x, plain)  # the crops did shift some images


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
    with pytest.raises(TypeError, match="labels must hold integers, got dtype torch.float64"):
        DeviceData(images, labels.astype(float))
    with pytest.raises(ValueError, match=r"labels must be >= 0; found -1 at index \(0,\)"):
        DeviceData(images, labels - 1)
    with pytest.raises(ValueError, match="labels must be 1-D"):
        DeviceData(images, labels[:, None])
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
    with pytest.raises(ValueError, match="start_batch must be at most 2, got 3"):
        data.batches(2, torch.Generator(), start_batch=3)


@pytest.mark.parametrize(
    "call, exc, words",
    [
        # the one rule: a wrong type is a TypeError, a bad value a ValueError, numpy integers are integers
        (lambda d, g: draw_augmentation(2.0, g), TypeError, "batch_size must be a non-negative integer, got 2.0"),
        (lambda d, g: draw_augmentation(2, g, pad=True), TypeError, "pad must be a non-negative integer, got True"),
        (lambda d, g: draw_augmentation(2, g, flip=1), TypeError, "flip must be True or False, got 1"),
        (lambda d, g: d.batches(2, g, pad=1.5, augment=True), TypeError, "pad must be a non-negative integer"),
        (lambda d, g: d.batches(2.0, g), TypeError, "batch_size must be a positive integer, got 2.0"),
        (lambda d, g: d.batches(2, g, start_batch=True), TypeError, "start_batch must be a non-negative integer"),
        (lambda d, g: d.num_batches(True), TypeError, "batch_size must be a positive integer, got True"),
        (
            lambda d, g: DeviceData(np.zeros((4, 1, 2, 2), np.uint8), np.arange(4), mean=[np.nan]),
            ValueError,
            "mean contains NaN or inf",
        ),
        (
            lambda d, g: DeviceData(np.ones((4, 1, 2, 2), np.uint8), np.arange(4), mean=["a"]),
            TypeError,
            "mean must hold numbers",
        ),
        (
            lambda d, g: DeviceData(np.ones((4, 1, 2, 2), np.uint8), np.arange(4), standardize=3),
            TypeError,
            "standardize must be one of 'channel', 'image', got 3",
        ),
        (
            lambda d, g: DeviceData(np.ones((4, 1, 2, 2), np.uint8), np.arange(4), device="tpu9"),
            ValueError,
            "device must be 'cpu' or a CUDA device, got 'tpu9'",
        ),
    ],
)
def test_arguments_follow_the_validation_rule(call, exc, words):
    data = DeviceData(np.arange(16, dtype=np.uint8).reshape(4, 1, 2, 2), np.arange(4))
    with pytest.raises(exc, match=words):
        call(data, torch.Generator())


def test_numpy_integers_are_accepted_for_sizes():
    data = DeviceData(np.arange(16, dtype=np.uint8).reshape(4, 1, 2, 2), np.arange(4))
    batches = list(
        data.batches(
            np.int64(2), torch.Generator(), augment=True, pad=np.int32(1), flip=np.True_, start_batch=np.int64(1)
        )
    )
    assert len(batches) == 1 and batches[0][0].shape == (2, 1, 2, 2)
    rows, _, flips = draw_augmentation(np.int64(3), torch.Generator(), pad=np.int64(2), flip=np.False_)
    assert rows.shape == (3,) and not flips.any()


def test_bad_augmentation_input():
    gen = torch.Generator()
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        augment_batch(torch.zeros(3, 4, 4), gen)
    with pytest.raises(TypeError, match=r"x must be a torch tensor of shape \(N, C, H, W\), got array"):
        augment_batch(np.zeros((1, 1, 4, 4)), gen)  # a wrong type (it was a ValueError)
    with pytest.raises(ValueError, match="pad"):
        augment_batch(torch.zeros(1, 1, 4, 4), gen, pad=-1)
    with pytest.raises(TypeError, match="torch.Generator"):
        augment_batch(torch.zeros(1, 1, 4, 4), None)
    with pytest.raises(ValueError, match="batch_size"):
        draw_augmentation(-1, gen)
    with pytest.raises(ValueError, match=r"rows must be a torch tensor of shape \(2,\), got shape \(3,\)"):
        crop_and_flip(
            torch.zeros(2, 1, 4, 4),
            torch.zeros(3, dtype=torch.long),
            torch.zeros(2, dtype=torch.long),
            torch.zeros(2, dtype=torch.bool),
            pad=1,
        )


# --- CIFAR binary archives ------------------------------------------------------------------------------
import hashlib  # noqa: E402
import http.server  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import tarfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402

from resnet_theory.engine.data import (  # noqa: E402
    CIFAR_LAYOUTS,
    EXPECTED_MD5,
    DatasetDownloadError,
    DatasetError,
    DatasetNotFoundError,
    file_md5,
    load_cifar,
)


def make_records(n, labels_per_record, rng):
    """n CIFAR records written byte by byte as the format describes, and the pixels they hold.

    A record: the label bytes, then the red plane, green plane, blue plane, each 32 rows of 32 bytes."""
    data = bytearray()
    pixels = rng.integers(0, 256, size=(n, 3, 32, 32)).tolist()  # pixels[i][channel][row][col]
    labels = []
    for i in range(n):
        record_labels = [int(rng.integers(0, k)) for k in labels_per_record]
        labels.append(record_labels)
        data.extend(record_labels)
        for channel in range(3):
            for row in range(32):
                for col in range(32):
                    data.append(pixels[i][channel][row][col])
    return bytes(data), pixels, labels


class Kind:
    def __init__(self, type):
        self.type = type


def write_tar(path, members):
    """members: list of (name, bytes) for files, or (name, Kind(tarfile type)) for directories and links."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            if isinstance(content, bytes):
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
            else:
                info.type = content.type
                info.linkname = "/etc/passwd"
                tar.addfile(info)


def cifar_members(name, rng, counts=None):
    """Members of a small archive in the official layout, and the expected arrays."""
    layout = CIFAR_LAYOUTS[name]
    per_record = (10,) if name == "cifar10" else (20, 100)
    files = layout.train + layout.test
    counts = counts or [2 + i % 3 for i in range(len(files))]
    members, expected = [(layout.folder + "/", Kind(tarfile.DIRTYPE))], {}
    for file, n in zip(files, counts):
        data, pixels, labels = make_records(n, per_record, rng)
        members.append((f"{layout.folder}/{file}", data))
        expected[file] = (pixels, labels)
    members.append((f"{layout.folder}/readme.txt", b"not a batch"))
    return members, expected


def check_loaded(loaded, expected, name):
    layout = CIFAR_LAYOUTS[name]
    for split, files in (("train", layout.train), ("test", layout.test)):
        images, labels = loaded[split]
        pixels = [p for f in files for p in expected[f][0]]
        label_bytes = [lab for f in files for lab in expected[f][1]]
        assert images.dtype == np.uint8 and images.shape == (len(pixels), 3, 32, 32)
        assert labels.dtype == np.int64 and labels.tolist() == [lab[-1] for lab in label_bytes]  # fine label
        assert images.tolist() == pixels
        # spot checks of the byte order: byte 1 of the pixels is red (row 0, col 1); byte 1024 + 32 is
        # green (row 1, col 0); byte 2048 + 33 is blue (row 1, col 1)
        assert images[0, 0, 0, 1] == pixels[0][0][0][1]
        assert images[0, 1, 1, 0] == pixels[0][1][1][0]
        assert images[0, 2, 1, 1] == pixels[0][2][1][1]


def test_record_layout_by_hand():
    # one CIFAR-10 record: label 7, red = 1 everywhere but (0, 1) = 200, green = 2, blue = 3
    record = bytes([7]) + bytes([1, 200] + [1] * 1022) + bytes([2] * 1024) + bytes([3] * 1024)
    from resnet_theory.engine.data import read_cifar_records

    images, labels = read_cifar_records(record, CIFAR_LAYOUTS["cifar10"], "test record")
    assert labels.tolist() == [7]
    assert images[0, 0, 0, 1] == 200 and images[0, 0, 0, 0] == 1 and images[0, 0, 1, 1] == 1
    assert (images[0, 1] == 2).all() and (images[0, 2] == 3).all()


def leftovers(root, *keep):
    return sorted(p.name for p in root.iterdir() if p.name not in keep)


@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
def test_cifar_from_archive_and_from_folder(tmp_path, name):
    layout = CIFAR_LAYOUTS[name]
    members, expected = cifar_members(name, np.random.default_rng(0))
    archive = tmp_path / layout.archive
    write_tar(archive, members)
    loaded = load_cifar(tmp_path, name, md5=file_md5(archive))
    check_loaded(loaded, expected, name)
    # extracted into place, no temporary folder left
    assert leftovers(tmp_path) == sorted([layout.archive, layout.folder])
    assert (tmp_path / layout.folder / "readme.txt").read_bytes() == b"not a batch"
    # the second call reads the extracted folder; the archive is no longer needed
    archive.unlink()
    check_loaded(load_cifar(tmp_path, name), expected, name)


def test_file_md5_and_published_checksums(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"abc" * 100_000)
    assert file_md5(path) == hashlib.md5(b"abc" * 100_000).hexdigest()
    assert EXPECTED_MD5 == {
        "cifar-10-binary.tar.gz": "c32a1d4ab5d03f1284b67883e8d87530",
        "cifar-100-binary.tar.gz": "03b5dce01913d631647c71ecec9e9cb8",
    }


def test_wrong_checksum_is_refused(tmp_path):
    members, _ = cifar_members("cifar10", np.random.default_rng(1))
    write_tar(tmp_path / "cifar-10-binary.tar.gz", members)
    # the default: the published checksum of the real archive, which this small one cannot match
    with pytest.raises(
        DatasetError,
        match=r"cifar-10-binary\.tar\.gz: MD5 checksum mismatch .*expected "
        r"c32a1d4ab5d03f1284b67883e8d87530",
    ):
        load_cifar(tmp_path, "cifar10")
    with pytest.raises(DatasetError, match="MD5 checksum mismatch"):
        load_cifar(tmp_path, "cifar10", md5="0" * 32)
    assert leftovers(tmp_path) == ["cifar-10-binary.tar.gz"]


@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
def test_truncated_member_is_refused(tmp_path, name):
    layout = CIFAR_LAYOUTS[name]
    members, _ = cifar_members(name, np.random.default_rng(2))
    victim = members[1][0]
    members[1] = (victim, members[1][1][:-7])
    archive = tmp_path / layout.archive
    write_tar(archive, members)
    with pytest.raises(
        DatasetError,
        match=rf"member {victim}: \d+ bytes is not a whole number of "
        rf"{layout.label_bytes + 3072}-byte",
    ):
        load_cifar(tmp_path, name, md5=file_md5(archive))
    assert leftovers(tmp_path) == [layout.archive]  # nothing half-extracted


def test_truncated_file_in_extracted_folder(tmp_path):
    members, _ = cifar_members("cifar10", np.random.default_rng(3))
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    for member, content in members[1:]:
        (tmp_path / member).write_bytes(content)
    (folder / "test_batch.bin").write_bytes((folder / "test_batch.bin").read_bytes()[: 3073 + 100])
    with pytest.raises(DatasetError, match=r"test_batch\.bin: 3173 bytes is not a whole number"):
        load_cifar(tmp_path, "cifar10")
    (folder / "test_batch.bin").unlink()
    with pytest.raises(DatasetError, match=r"test_batch\.bin: missing"):
        load_cifar(tmp_path, "cifar10")


def test_label_out_of_range_is_refused(tmp_path):
    # a CIFAR-100 record read as CIFAR-10: coarse label 15 is no CIFAR-10 class
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    record = bytes([15]) + bytes(3072)
    for name in CIFAR_LAYOUTS["cifar10"].train + CIFAR_LAYOUTS["cifar10"].test:
        (folder / name).write_bytes(record)
    with pytest.raises(DatasetError, match=r"data_batch_1\.bin: label byte 0 has value 15, but CIFAR-10 has 10"):
        load_cifar(tmp_path, "cifar10")


def test_missing_member_is_refused(tmp_path):
    members, _ = cifar_members("cifar100", np.random.default_rng(4))
    members = [m for m in members if not m[0].endswith("test.bin")]
    archive = tmp_path / "cifar-100-binary.tar.gz"
    write_tar(archive, members)
    with pytest.raises(DatasetError, match=r"cifar-100-binary\.tar\.gz: missing member cifar-100-binary/test\.bin"):
        load_cifar(tmp_path, "cifar100", md5=file_md5(archive))
    assert leftovers(tmp_path) == ["cifar-100-binary.tar.gz"]


@pytest.mark.parametrize(
    "evil",
    [
        ("cifar-10-batches-bin/../../escaped.bin", b"x"),
        ("../escaped.bin", b"x"),
        ("/tmp/escaped-cifar-test.bin", b"x"),
        ("cifar-10-batches-bin/link", Kind(tarfile.SYMTYPE)),
        ("cifar-10-batches-bin/hard", Kind(tarfile.LNKTYPE)),
    ],
)
def test_path_traversal_and_links_are_refused(tmp_path, evil):
    root = tmp_path / "data"
    root.mkdir()
    members, _ = cifar_members("cifar10", np.random.default_rng(5))
    members.insert(2, evil)
    archive = root / "cifar-10-binary.tar.gz"
    write_tar(archive, members)
    with pytest.raises(DatasetError, match=r"cifar-10-binary\.tar\.gz: member .*(path traversal|link or special)"):
        load_cifar(root, "cifar10", md5=file_md5(archive))
    assert leftovers(root) == ["cifar-10-binary.tar.gz"]
    assert leftovers(tmp_path) == ["data"]
    assert not list(tmp_path.rglob("escaped*"))
    assert not os.path.exists("/tmp/escaped-cifar-test.bin")


def test_damaged_archive_is_refused(tmp_path):
    members, _ = cifar_members("cifar10", np.random.default_rng(6))
    archive = tmp_path / "cifar-10-binary.tar.gz"
    write_tar(archive, members)
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    # even with a checksum that matches the damaged file, reading it fails cleanly
    with pytest.raises(
        DatasetError,
        match=r"cifar-10-binary\.tar\.gz: its checksum verified but it cannot be "
        r"read as a tar archive",
    ) as info:
        load_cifar(tmp_path, "cifar10", md5=file_md5(archive))
    assert "delete" not in str(info.value)  # never advise deleting a file that verified
    assert leftovers(tmp_path) == ["cifar-10-binary.tar.gz"]


def test_nothing_there_says_where_to_put_the_archive(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=rf"put it at {tmp_path}/cifar-100-binary\.tar\.gz"):
        load_cifar(tmp_path, "cifar100")


def _closed_local_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_download_without_network_fails_fast_with_instructions(tmp_path):
    url = f"http://127.0.0.1:{_closed_local_port()}/cifar-10-binary.tar.gz"
    start = time.perf_counter()
    with pytest.raises(DatasetDownloadError) as info:
        load_cifar(tmp_path / "data", "cifar10", download=True, url=url, timeout=2)
    assert time.perf_counter() - start < 5
    message = str(info.value)
    assert f"could not download {url}" in message
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz" in message
    assert f"put it at {tmp_path / 'data' / 'cifar-10-binary.tar.gz'}" in message
    assert "c32a1d4ab5d03f1284b67883e8d87530" in message
    assert not (tmp_path / "data").exists()  # no partial download, and no folder created for it
    assert isinstance(info.value, OSError)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def local_server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    handler = partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_verifies_then_extracts(tmp_path, local_server):
    served, base = local_server
    members, expected = cifar_members("cifar10", np.random.default_rng(7))
    write_tar(served / "cifar-10-binary.tar.gz", members)
    md5 = file_md5(served / "cifar-10-binary.tar.gz")
    root = tmp_path / "data"
    with pytest.raises(DatasetError, match="the downloaded file has MD5"):
        load_cifar(root, "cifar10", download=True, url=f"{base}/cifar-10-binary.tar.gz", md5="f" * 32)
    assert not root.exists()  # the folder created for the download is removed with it
    loaded = load_cifar(root, "cifar10", download=True, url=f"{base}/cifar-10-binary.tar.gz", md5=md5)
    check_loaded(loaded, expected, "cifar10")
    assert leftovers(root) == ["cifar-10-batches-bin", "cifar-10-binary.tar.gz"]
    with pytest.raises(DatasetDownloadError, match="404"):
        load_cifar(tmp_path / "other", "cifar10", download=True, url=f"{base}/missing.tar.gz", md5=md5)


def test_bad_cifar_arguments(tmp_path):
    with pytest.raises(ValueError, match="name must be one of"):
        load_cifar(tmp_path, "cifar1000")
    with pytest.raises(TypeError, match="root must be a path"):
        load_cifar(42)
    with pytest.raises(ValueError, match="md5 must be 32 hexadecimal"):
        load_cifar(tmp_path, md5="xyz")
    with pytest.raises(ValueError, match="timeout must be > 0.0, got 0"):
        load_cifar(tmp_path, download=True, timeout=0)
    with pytest.raises(TypeError, match="timeout must be a real number, got True"):
        load_cifar(tmp_path, download=True, timeout=True)
    with pytest.raises(TypeError, match="md5 must be a string of 32 hexadecimal digits, got 5"):
        load_cifar(tmp_path, md5=5)  # was an AttributeError
    with pytest.raises(TypeError, match="download must be True or False, got 'no'"):
        load_cifar(tmp_path, download="no")  # was taken as True
    with pytest.raises(ValueError, match="root must be a path, got an empty name"):
        load_cifar("")
    from resnet_theory.engine.data import download_archive

    with pytest.raises(TypeError, match=r"destination must be a path \(str or pathlib.Path\), got 5"):
        download_archive("http://127.0.0.1:9/x", 5, "f" * 32)  # was a TypeError from pathlib, unnamed
    with pytest.raises(TypeError, match="url must be a URL string, got None"):
        download_archive(None, tmp_path / "x", "f" * 32)
    assert not list(tmp_path.iterdir())


# --- the TensorFlow ResNet recipe: black padding, per-image standardisation -------------------------------
def test_standardize_per_image_matches_tensorflows_definition():
    from resnet_theory.engine.data import standardize_per_image

    x = torch.rand(5, 3, 6, 6) * 4 + 1
    out = standardize_per_image(x)
    flat = out.flatten(1)
    torch.testing.assert_close(flat.mean(1), torch.zeros(5), atol=1e-5, rtol=0)
    torch.testing.assert_close(flat.std(1, unbiased=False), torch.ones(5), atol=1e-5, rtol=0)
    constant = standardize_per_image(torch.full((1, 3, 4, 4), 0.7))  # std floored at 1/sqrt(48): no NaN
    assert bool(constant.isfinite().all()) and float(constant.abs().max()) < 1e-5
    with pytest.raises(ValueError, match=r"x must be a float torch tensor of shape \(N, C, H, W\), got shape"):
        standardize_per_image(torch.zeros(3, 4, 4))
    with pytest.raises(ValueError, match="got dtype torch.uint8"):
        standardize_per_image(torch.zeros(1, 3, 4, 4, dtype=torch.uint8))


def test_image_standardisation_pads_black_and_standardises_after_the_crop():
    from resnet_theory.engine.data import crop_and_flip, draw_augmentation, standardize_per_image

    images = torch.randint(0, 256, (6, 3, 8, 8), dtype=torch.uint8)
    data = DeviceData(images, torch.arange(6), standardize="image")
    torch.testing.assert_close(data.images, images.float() / 255)  # kept on the [0, 1] scale
    gen = torch.Generator().manual_seed(3)
    x, _ = next(data.batches(6, gen, augment=True, shuffle=False, pad=2, flip=True))
    params = draw_augmentation(6, torch.Generator().manual_seed(3), 2, True)
    expected = standardize_per_image(crop_and_flip(images.float() / 255, *params, pad=2))
    torch.testing.assert_close(x, expected)
    plain, _ = next(data.batches(6, None, augment=False, shuffle=False))
    torch.testing.assert_close(plain, standardize_per_image(images.float() / 255))
    with pytest.raises(ValueError, match="standardize"):
        DeviceData(images, torch.arange(6), standardize="pixel")


def test_engine_offers_the_tensorflow_recipe():
    from resnet_theory.engine import train as engine

    config = engine.TrainConfig(dataset="digits", **engine.TENSORFLOW_RECIPE)
    assert config.augmentation == (True, 2, True) and config.standardize == "image"
    with pytest.raises(engine.ConfigError, match="standardize"):
        engine.TrainConfig(dataset="digits", standardize="pixel").validate()


# --- storage problems are not damage ---------------------------------------------------------------------
import errno  # noqa: E402

from resnet_theory.engine import data as data_module  # noqa: E402
from resnet_theory.engine.data import DatasetStorageError  # noqa: E402


def _good_archive(tmp_path, seed):
    members, _ = cifar_members("cifar10", np.random.default_rng(seed))
    archive = tmp_path / "cifar-10-binary.tar.gz"
    write_tar(archive, members)
    return archive


def _failing(code, text):
    """A stand-in for a file-system call that fails with ``OSError(code, text)``."""

    def fail(*args, **kwargs):
        raise OSError(code, text)

    return fail


def test_full_disk_while_extracting_is_not_called_damage(tmp_path, monkeypatch):
    archive = _good_archive(tmp_path, 7)
    monkeypatch.setattr(data_module.shutil, "copyfileobj", _failing(errno.ENOSPC, "No space left on device"))
    with pytest.raises(DatasetStorageError) as info:
        load_cifar(tmp_path, "cifar10", md5=file_md5(archive))
    message = str(info.value)
    assert "no space left" in message and str(tmp_path) in message and "is kept" in message
    assert "delete" not in message and "damaged" not in message
    assert leftovers(tmp_path) == ["cifar-10-binary.tar.gz"]  # the good archive and nothing half-written
    monkeypatch.undo()
    load_cifar(tmp_path, "cifar10", md5=file_md5(archive))  # and it still works once there is room


def test_read_only_root_is_a_clear_error(tmp_path, monkeypatch):
    archive = _good_archive(tmp_path, 8)
    read_only = _failing(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(data_module.tempfile, "mkdtemp", read_only)
    with pytest.raises(
        DatasetStorageError,
        match=rf"cannot extract cifar-10-binary.tar.gz in {tmp_path}: the file "
        r"system is read-only; the archive is kept",
    ):
        load_cifar(tmp_path, "cifar10", md5=file_md5(archive))
    monkeypatch.setattr(data_module.tempfile, "mkstemp", read_only)
    with pytest.raises(DatasetStorageError, match="read-only"):
        load_cifar(tmp_path / "empty", "cifar10", download=True, url="http://127.0.0.1:9/x.tar.gz", md5="f" * 32)
    assert not (tmp_path / "empty").exists()


def test_failed_download_into_a_new_nested_root_leaves_no_folders(tmp_path):
    url = f"http://127.0.0.1:{_closed_local_port()}/cifar-10-binary.tar.gz"
    with pytest.raises(DatasetDownloadError):
        load_cifar(tmp_path / "a" / "b" / "c", "cifar10", download=True, url=url, timeout=2)
    assert list(tmp_path.iterdir()) == []

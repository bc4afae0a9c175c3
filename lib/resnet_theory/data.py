"""Image data for the all-convolutional experiments of Hardt & Ma (ICLR 2017, Section 4).

- :func:`load_digits_images`: scikit-learn's bundled 8x8 handwritten digits as a fixed train/test split
  (the CPU datasets of the book: no download needed).
- :func:`load_cifar`: CIFAR-10 / CIFAR-100 from the official *binary* archives (see its docstring).
- :class:`DeviceData` and :func:`augment_batch`: the whole split lives on the device as normalised float
  tensors; batches are drawn and augmented (random crop after zero padding, horizontal flip) with batched
  tensor operations, with no per-image Python work in the training loop.

Randomness: every random choice (shuffling, crop offsets, flips) is drawn from a ``torch.Generator`` that
the caller passes in, so a run is reproducible, and resumable from a saved generator state. Draws happen
on the generator's device (use a CUDA generator for data on a GPU, to keep the loop free of host copies).
The order of the draws is fixed and documented in :meth:`DeviceData.batches` and :func:`augment_batch`.

Augmentation pads the *normalised* images with zeros, i.e. with the per-channel mean colour (the mean of
the training split is 0 after normalisation). The paper does not describe its augmentation ("standard data
augmentation"); 4-pixel padding, 32x32 random crops and left-right flips are the usual CIFAR recipe.
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

import numpy as np
import torch

#: The fixed digits split: a stratified 80/20 split of scikit-learn's 1,797 images with this seed,
#: giving 1,437 training and 360 test images.
DIGITS_TEST_FRACTION = 0.2
DIGITS_SPLIT_SEED = 0


def load_digits_images() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's 8x8 handwritten digits as ``{"train": (images, labels), "test": (images, labels)}``.

    Images are uint8 ``(N, 1, 8, 8)``: the original gray levels 0..16 rescaled to 0..255 (``round(v * 255 /
    16)``); labels are int64 ``(N,)`` in 0..9. The split is stratified by class, fixed
    (:data:`DIGITS_TEST_FRACTION`, :data:`DIGITS_SPLIT_SEED`): 1,437 training and 360 test images.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = np.rint(digits.images * (255.0 / 16.0)).astype(np.uint8)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=DIGITS_TEST_FRACTION, stratify=labels, random_state=DIGITS_SPLIT_SEED)
    return {"train": (np.ascontiguousarray(x_train), y_train), "test": (np.ascontiguousarray(x_test), y_test)}


# --- augmentation on the device -------------------------------------------------------------------
def _check_generator(generator) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (for reproducible draws), got {type(generator).__name__}")
    return generator


def _check_pad(pad) -> int:
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise ValueError(f"pad must be a non-negative integer, got {pad!r}")
    return pad


def draw_augmentation(batch_size: int, generator: torch.Generator, pad: int = 4,
                      flip: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The random choices for one batch, in this order: row offsets, column offsets (each uniform in
    ``0..2*pad``), then flips (``True`` with probability 1/2; all ``False`` and no draw when ``flip`` is
    off). Returned on the generator's device."""
    _check_generator(generator)
    pad = _check_pad(pad)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 0:
        raise ValueError(f"batch_size must be a non-negative integer, got {batch_size!r}")
    dev = generator.device
    rows = torch.randint(0, 2 * pad + 1, (batch_size,), generator=generator, device=dev)
    cols = torch.randint(0, 2 * pad + 1, (batch_size,), generator=generator, device=dev)
    if flip:
        flips = torch.rand(batch_size, generator=generator, device=dev) < 0.5
    else:
        flips = torch.zeros(batch_size, dtype=torch.bool, device=dev)
    return rows, cols, flips


def crop_and_flip(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, flips: torch.Tensor,
                  pad: int) -> torch.Tensor:
    """Zero-pad ``x`` (N, C, H, W) by ``pad`` on every side, take the H x W window whose top-left corner is
    ``(rows[i], cols[i])`` in the padded image, and mirror it left-right where ``flips[i]``. One gather."""
    pad = _check_pad(pad)
    if x.dim() != 4:
        raise ValueError(f"expected a batch of shape (N, C, H, W), got {tuple(x.shape)}")
    n, c, h, w = x.shape
    for name, t in (("rows", rows), ("cols", cols), ("flips", flips)):
        if t.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {tuple(t.shape)}")
    dev = x.device
    rows, cols, flips = rows.to(dev), cols.to(dev), flips.to(dev)
    if pad:
        x = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    j = torch.arange(w, device=dev)
    col_index = cols[:, None] + torch.where(flips[:, None], w - 1 - j, j)          # (N, W)
    row_index = rows[:, None] + torch.arange(h, device=dev)                          # (N, H)
    batch_index = torch.arange(n, device=dev)[:, None, None, None]
    chan_index = torch.arange(c, device=dev)[None, :, None, None]
    return x[batch_index, chan_index, row_index[:, None, :, None], col_index[:, None, None, :]]


def augment_batch(x: torch.Tensor, generator: torch.Generator, pad: int = 4, flip: bool = True,
                  return_params: bool = False):
    """Random crop after zero padding by ``pad`` pixels, and random horizontal flip, for a whole batch.

    ``x``: float (N, C, H, W) on any device. The random choices come from :func:`draw_augmentation` (one
    call, on the generator's device). With ``return_params=True`` returns ``(augmented, (rows, cols,
    flips))``. For 8x8 digits use ``pad=1, flip=False``: a mirrored digit is another symbol.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        raise ValueError(f"expected a tensor batch of shape (N, C, H, W), got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    params = draw_augmentation(x.shape[0], generator, pad, flip)
    out = crop_and_flip(x, *params, pad=pad)
    return (out, params) if return_params else out


# --- the dataset on the device ----------------------------------------------------------------------
def _as_tensor(array, name: str) -> torch.Tensor:
    if isinstance(array, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(array))
    if isinstance(array, torch.Tensor):
        return array
    raise TypeError(f"{name} must be a numpy array or a torch tensor, got {type(array).__name__}")


def _channel_stats(values, name: str, channels: int) -> torch.Tensor:
    t = torch.as_tensor(values, dtype=torch.float32).flatten().cpu()
    if t.numel() != channels:
        raise ValueError(f"{name} must have one entry per channel ({channels}), got {t.numel()}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite, got {t.tolist()}")
    return t


class DeviceData:
    """One split held on ``device`` as normalised float32 images ``(N, C, H, W)`` and int64 labels.

    ``images_uint8``: uint8 ``(N, C, H, W)`` (numpy or torch); ``labels``: integer ``(N,)``. Pixels are
    scaled to [0, 1] and standardised per channel: ``(x / 255 - mean[c]) / std[c]``. When ``mean``/``std``
    are not given they are computed from these images (pass the training split's ``.mean`` and ``.std``
    when building the test split). Both are on the [0, 1] scale, one value per channel.
    """

    def __init__(self, images_uint8, labels, device="cpu", mean: Sequence[float] | None = None,
                 std: Sequence[float] | None = None):
        images = _as_tensor(images_uint8, "images_uint8")
        labels = _as_tensor(labels, "labels")
        if images.dtype != torch.uint8:
            raise TypeError(f"images_uint8 must have dtype uint8 (raw pixels), got {images.dtype}")
        if images.dim() != 4 or images.shape[0] == 0:
            raise ValueError(f"images_uint8 must have shape (N, C, H, W) with N > 0, got {tuple(images.shape)}")
        if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.dim() != 1:
            raise ValueError(f"labels must be a 1-d integer array, got dtype {labels.dtype}, shape {tuple(labels.shape)}")
        if labels.shape[0] != images.shape[0]:
            raise ValueError(f"{images.shape[0]} images but {labels.shape[0]} labels")
        if labels.min() < 0:
            raise ValueError(f"labels must be non-negative, found {int(labels.min())}")
        self.device = torch.device(device)
        channels = images.shape[1]
        scaled = images.to(self.device).float().div_(255.0)
        if mean is None:
            mean = scaled.mean(dim=(0, 2, 3)).cpu()
        if std is None:
            std = scaled.std(dim=(0, 2, 3)).cpu()
        self.mean = _channel_stats(mean, "mean", channels)
        self.std = _channel_stats(std, "std", channels)
        if (self.std <= 0).any():
            raise ValueError(f"std must be positive in every channel, got {self.std.tolist()} "
                             "(a constant channel cannot be standardised)")
        view = (1, channels, 1, 1)
        self.images = scaled.sub_(self.mean.to(self.device).view(view)).div_(self.std.to(self.device).view(view))
        self.labels = labels.to(self.device, torch.int64)

    def __len__(self) -> int:
        return self.images.shape[0]

    def num_batches(self, batch_size: int, drop_last: bool = True) -> int:
        """Batches per pass over the split."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        return len(self) // batch_size if drop_last else math.ceil(len(self) / batch_size)

    def batches(self, batch_size: int, generator: torch.Generator | None = None, augment: bool = False,
                shuffle: bool = True, drop_last: bool = True, pad: int = 4, flip: bool = True,
                start_batch: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """One pass over the split as ``(x, y)`` batches on the device.

        Draws, in order: the permutation (``torch.randperm`` of N, when ``shuffle``), then for each batch
        the augmentation choices (:func:`draw_augmentation`, when ``augment``). ``start_batch=k`` skips the
        first k batches while consuming exactly the random numbers they would have used, so an epoch
        restarted from the generator state saved at its start continues as if never interrupted.
        A ``generator`` is required when shuffling or augmenting.
        """
        n_batches = self.num_batches(batch_size, drop_last)
        _check_pad(pad)
        if isinstance(start_batch, bool) or not isinstance(start_batch, int) or not 0 <= start_batch <= n_batches:
            raise ValueError(f"start_batch must be an integer in 0..{n_batches}, got {start_batch!r}")
        if (shuffle or augment) and generator is None:
            raise ValueError("shuffling or augmenting needs a torch.Generator (for reproducible draws)")
        if generator is not None:
            _check_generator(generator)
        n = len(self)
        if shuffle:
            order = torch.randperm(n, generator=generator, device=generator.device).to(self.device)
        else:
            order = torch.arange(n, device=self.device)
        return self._iterate(order, batch_size, n_batches, generator, augment, pad, flip, start_batch)

    def _iterate(self, order, batch_size, n_batches, generator, augment, pad, flip, start_batch):
        n = len(self)
        for b in range(n_batches):
            index = order[b * batch_size:min((b + 1) * batch_size, n)]
            if augment:
                params = draw_augmentation(index.shape[0], generator, pad, flip)
            if b < start_batch:
                continue
            x = self.images[index]
            if augment:
                x = crop_and_flip(x, *params, pad=pad)
            yield x, self.labels[index]

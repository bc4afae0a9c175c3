"""Image data for the all-convolutional experiments of Hardt & Ma (ICLR 2017, Section 4).

- :func:`load_digits_images`: scikit-learn's bundled 8x8 handwritten digits as a fixed train/test split
  (the CPU datasets of the book: no download needed).
- :func:`load_cifar`: CIFAR-10 / CIFAR-100 from the official *binary* archives or their extracted folders,
  checksummed, parsed record by record with numpy (never unpickled), extracted safely (see below).
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
``DeviceData(..., standardize="image")`` gives the recipe of the TensorFlow ResNet code the authors started
from instead: pixels scaled to [0, 1] and padded with zeros (black), and every image, after its crop and
flip, standardised by its own mean and standard deviation (:func:`standardize_per_image`); use it with
``pad=2`` (36x36 before the 32x32 crop).
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import torch

from .. import validate

#: The fixed digits split: a stratified 80/20 split of scikit-learn's 1,797 images with this seed,
#: giving 1,437 training and 360 test images.
DIGITS_TEST_FRACTION = 0.2
DIGITS_SPLIT_SEED = 0


def load_digits_images() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's 8x8 handwritten digits as ``{"train": (images, labels), "test": (images, labels)}``.

    Images are uint8 ``(N, 1, 8, 8)``: the original gray levels 0..16 rescaled to 0..255 (``round(v * 255 /
    16)``); labels are int64 ``(N,)`` in 0..9. The split is stratified by class, fixed
    (:data:`DIGITS_TEST_FRACTION`, :data:`DIGITS_SPLIT_SEED`): 1,437 training and 360 test images, bitwise
    scikit-learn's ``train_test_split(..., stratify=labels, random_state=0)`` (tests/test_data.py compares them)
    without importing scikit-learn, which cost every training process about a second of CPU time.
    """
    data = _digits_csv()
    images = np.rint(data[:, :-1].reshape(-1, 8, 8) * (255.0 / 16.0)).astype(np.uint8)[:, None, :, :]
    labels = data[:, -1].astype(np.int64)
    train, test = _stratified_split(labels, DIGITS_TEST_FRACTION, DIGITS_SPLIT_SEED)
    return {
        "train": (np.ascontiguousarray(images[train]), labels[train]),
        "test": (np.ascontiguousarray(images[test]), labels[test]),
    }


def _digits_csv() -> np.ndarray:
    """scikit-learn's bundled ``digits.csv.gz`` (64 gray levels and the label per row), read as its ``load_digits``
    reads it, found without importing the package."""
    import gzip
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the digits need scikit-learn's bundled data: pip install scikit-learn")
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, mode="rt", encoding="utf-8") as f:
        return np.loadtxt(f, delimiter=",")


def _stratified_split(labels: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test indices as scikit-learn's ``StratifiedShuffleSplit`` draws its first split (the same draws
    from ``RandomState(seed)`` in the same order: the per-class counts, ties broken at random, each class's
    permutation, then the two permutations)."""
    n = len(labels)
    n_test = int(np.ceil(test_fraction * n))
    n_train = int(np.floor((1.0 - test_fraction) * n))
    _, y_indices, class_counts = np.unique(labels, return_inverse=True, return_counts=True)
    class_indices = np.split(np.argsort(y_indices, kind="stable"), np.cumsum(class_counts)[:-1])
    rng = np.random.RandomState(seed)
    n_i = _approximate_mode(class_counts, n_train, rng)
    t_i = _approximate_mode(class_counts - n_i, n_test, rng)
    train, test = [], []
    for i, count in enumerate(class_counts):
        drawn = class_indices[i].take(rng.permutation(count), mode="clip")
        train.extend(drawn[: n_i[i]])
        test.extend(drawn[n_i[i] : n_i[i] + t_i[i]])
    return rng.permutation(train), rng.permutation(test)


def _approximate_mode(class_counts: np.ndarray, n_draws: int, rng: np.random.RandomState) -> np.ndarray:
    """How many of ``n_draws`` come from each class (scikit-learn's ``utils.extmath._approximate_mode``): the
    floored proportional shares, the rest added by largest remainder, ties drawn at random."""
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            floored[rng.choice(inds, size=add_now, replace=False)] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    return floored.astype(int)


# --- CIFAR-10 / CIFAR-100 from the binary archives ------------------------------------------------------
class DatasetError(Exception):
    """A dataset file is damaged, truncated, unsafe or otherwise not what it should be (the message names it)."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """Neither the archive nor its extracted folder is there (the message says where to put them)."""


class DatasetDownloadError(DatasetError, ConnectionError):
    """The download failed (no network, unreachable host, ...); the message says where to put the archive."""


class DatasetStorageError(DatasetError, OSError):
    """The data folder cannot be written (no space left, permission denied, read-only); the files in it are
    not at fault and are kept."""


@dataclass(frozen=True)
class CifarLayout:
    """Where one CIFAR variant lives and how its records look."""

    title: str
    archive: str  # file name of the official binary archive
    url: str  # the dataset authors' address for it
    folder: str  # the folder the archive extracts to
    train: tuple  # member files of the training split, in order
    test: tuple
    label_bytes: int  # 1 (CIFAR-10) or 2 (CIFAR-100: coarse, then fine)
    classes: tuple  # number of classes of each label byte, in record order


CIFAR_LAYOUTS = {
    "cifar10": CifarLayout(
        "CIFAR-10",
        "cifar-10-binary.tar.gz",
        "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
        "cifar-10-batches-bin",
        tuple(f"data_batch_{i}.bin" for i in range(1, 6)),
        ("test_batch.bin",),
        1,
        (10,),
    ),
    "cifar100": CifarLayout(
        "CIFAR-100",
        "cifar-100-binary.tar.gz",
        "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",
        "cifar-100-binary",
        ("train.bin",),
        ("test.bin",),
        2,
        (20, 100),
    ),
}

#: Published MD5 checksums of the archives, keyed by file name. :func:`load_cifar` looks the expected sum
#: up here unless it is given ``md5=...`` (which the tests use, on small archives they write themselves,
#: so that they run the same checksum code as a real archive does).
EXPECTED_MD5 = {
    "cifar-10-binary.tar.gz": "c32a1d4ab5d03f1284b67883e8d87530",
    "cifar-100-binary.tar.gz": "03b5dce01913d631647c71ecec9e9cb8",
}

IMAGE_BYTES = 3 * 32 * 32
#: Records in each batch file of the official archives: no batch file of the format holds more, so a larger
#: member (or file) is refused before it is read. Any other member (names, readme) is at most
#: ``OTHER_MEMBER_MAX_BYTES``.
OFFICIAL_RECORDS = {
    "cifar-10-batches-bin": {**{f"data_batch_{i}.bin": 10_000 for i in range(1, 6)}, "test_batch.bin": 10_000},
    "cifar-100-binary": {"train.bin": 50_000, "test.bin": 10_000},
}
OTHER_MEMBER_MAX_BYTES = 1 << 20


def max_member_bytes(layout: CifarLayout, name: str) -> int:
    """The largest a file ``name`` of ``layout``'s folder can be in the official format."""
    records = OFFICIAL_RECORDS.get(layout.folder, {}).get(name)
    return OTHER_MEMBER_MAX_BYTES if records is None else records * (layout.label_bytes + IMAGE_BYTES)


def _too_large(size: int, limit: int, source: str, layout: CifarLayout) -> DatasetError:
    return DatasetError(
        f"{source}: {size:,} bytes, more than the {limit:,} bytes a file of the {layout.title} "
        f"format can hold; refusing to read it (not a {layout.title} file?)"
    )


def file_md5(path: str | os.PathLike) -> str:
    """Hex MD5 of a file, read in 1 MiB chunks."""
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_cifar_records(data: bytes, layout: CifarLayout, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Parse CIFAR binary records: ``label_bytes`` label bytes, then 3,072 pixel bytes (1,024 red, 1,024
    green, 1,024 blue, each plane row-major). Returns uint8 images ``(N, 3, 32, 32)`` and int64 labels
    (the last label byte: the fine label for CIFAR-100). ``source`` names the file in error messages."""
    record = layout.label_bytes + IMAGE_BYTES
    if len(data) == 0 or len(data) % record:
        raise DatasetError(
            f"{source}: {len(data)} bytes is not a whole number of {record}-byte "
            f"{layout.title} records (the file is truncated or not a {layout.title} batch)"
        )
    rows = np.frombuffer(data, dtype=np.uint8).reshape(-1, record)
    for byte, classes in enumerate(layout.classes):
        if rows[:, byte].max() >= classes:
            raise DatasetError(
                f"{source}: label byte {byte} has value {int(rows[:, byte].max())}, but "
                f"{layout.title} has {classes} classes there (not a {layout.title} file?)"
            )
    labels = rows[:, layout.label_bytes - 1].astype(np.int64)
    images = rows[:, layout.label_bytes :].reshape(-1, 3, 32, 32).copy()
    return images, labels


#: The file, inside an extracted CIFAR folder, that records the SHA-256 of each batch file when
#: :func:`load_cifar` extracts the verified archive (``sha256sum`` format); checked before every use.
CHECKSUMS_NAME = "SHA256SUMS"


def _read_split(
    folder: Path, files: Sequence[str], layout: CifarLayout, describe, digests: dict
) -> tuple[np.ndarray, np.ndarray]:
    parts = []
    for name in files:
        path = folder / name
        if not path.is_file():
            raise DatasetError(f"{describe(name)}: missing (expected {layout.title} batch {name!r} in {folder})")
        size, limit = path.stat().st_size, max_member_bytes(layout, name)
        if size > limit:
            raise _too_large(size, limit, describe(name), layout)
        data = path.read_bytes()
        parts.append(read_cifar_records(data, layout, describe(name)))
        digests[name] = hashlib.sha256(data).hexdigest()  # of the very bytes used
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _read_folder(folder: Path, layout: CifarLayout, describe=None, digests: dict | None = None) -> dict:
    """Both splits of an extracted folder, each file checked to be whole records with valid labels; the SHA-256
    of each batch file read goes into ``digests``."""
    describe = describe or (lambda name: str(folder / name))
    digests = {} if digests is None else digests
    return {
        "train": _read_split(folder, layout.train, layout, describe, digests),
        "test": _read_split(folder, layout.test, layout, describe, digests),
    }


def _write_checksums(folder: Path, digests: dict) -> None:
    (folder / CHECKSUMS_NAME).write_text("".join(f"{digests[name]}  {name}\n" for name in sorted(digests)))


def _recorded_checksums(folder: Path, layout: CifarLayout) -> dict[str, str]:
    """The checksums recorded at extraction; a folder without them, or with a damaged record, is refused."""
    path = folder / CHECKSUMS_NAME
    if not path.is_file():
        raise DatasetError(
            f"{folder}: no checksums recorded for its batch files ({CHECKSUMS_NAME}, written when load_cifar "
            f"extracts the official archive, whose MD5 is published): move the folder aside and put "
            f"{layout.archive} in {folder.parent}, or, for a folder you extracted yourself from the verified "
            f"archive, call resnet_theory.engine.data.record_checksums({str(folder)!r}) once"
        )
    recorded = {}
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not name:
            raise DatasetError(f"{path} line {number}: not '<sha256>  <file>'; the record is damaged")
        recorded[name] = digest
    return recorded


def _read_verified_folder(folder: Path, layout: CifarLayout) -> dict:
    """An extracted folder, used only when every batch file has the SHA-256 recorded at its extraction."""
    digests: dict[str, str] = {}
    data = _read_folder(folder, layout, digests=digests)  # whole records with valid labels, or the file named
    recorded = _recorded_checksums(folder, layout)
    for name, digest in digests.items():
        if recorded.get(name) != digest:
            raise DatasetError(
                f"{folder / name}: its SHA-256 {digest[:16]}... is not the one recorded when the archive was "
                f"extracted ({(recorded.get(name) or 'none')[:16]}...): the file was changed or damaged; move "
                f"{folder.name} aside and load again from the archive"
            )
    return data


def record_checksums(folder: str | os.PathLike, name: str = "cifar10") -> Path:
    """Record the SHA-256 of each batch file of a CIFAR folder that you extracted yourself from the verified
    official archive (:func:`load_cifar` does it when it extracts); every file is checked to be whole records
    with valid labels first. Returns the checksums file."""
    layout = CIFAR_LAYOUTS[validate.choice("name", name, sorted(CIFAR_LAYOUTS))]
    folder = Path(validate.path("folder", folder))
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a folder")
    digests: dict[str, str] = {}
    _read_folder(folder, layout, digests=digests)
    _write_checksums(folder, digests)
    return folder / CHECKSUMS_NAME


def _safe_members(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    """Every member, after checking that none is a link or device and none would land outside the folder."""
    members = tar.getmembers()
    for m in members:
        path = PurePosixPath(m.name)
        if not path.parts and m.isdir():  # "./": the extraction folder itself
            continue
        if (
            not path.parts
            or path.is_absolute()
            or ".." in path.parts
            or m.name.startswith(("/", "\\"))
            or ":" in path.parts[0]
        ):
            raise DatasetError(
                f"{archive}: member {m.name!r} would be written outside the extraction folder "
                "(path traversal); refusing to extract anything"
            )
        if not (m.isfile() or m.isdir()):
            raise DatasetError(f"{archive}: member {m.name!r} is a link or special file; refusing to extract anything")
    return members


def _extract_archive(archive: Path, root: Path, layout: CifarLayout) -> dict:
    """Extract into a temporary folder beside the target, check every batch, then rename into place.

    On any error the temporary folder is removed: nothing half-written is left behind."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{layout.folder}.extracting-", dir=root))
    except OSError as exc:
        raise DatasetStorageError(
            f"cannot extract {archive.name} in {root}: {validate.describe_os_error(exc)}; the archive is kept"
        ) from exc
    try:
        try:
            with tarfile.open(archive, "r:*") as tar:
                members = _safe_members(tar, archive)
                names = {PurePosixPath(m.name).as_posix() for m in members if m.isfile()}
                for name in layout.train + layout.test:
                    if f"{layout.folder}/{name}" not in names:
                        raise DatasetError(f"{archive}: missing member {layout.folder}/{name}")
                for m in members:  # sizes from the tar headers: nothing is read yet
                    if m.isfile() and m.size > (limit := max_member_bytes(layout, PurePosixPath(m.name).name)):
                        raise _too_large(m.size, limit, f"{archive}: member {m.name}", layout)
                for m in members:
                    target = tmp.joinpath(*PurePosixPath(m.name).parts)
                    if tmp.resolve() not in target.resolve().parents and target.resolve() != tmp.resolve():
                        raise DatasetError(
                            f"{archive}: member {m.name!r} would be written outside the extraction "
                            "folder (path traversal); refusing to extract anything"
                        )
                    if m.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(m) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
        except OSError as exc:
            if validate.storage_problem(exc):
                raise DatasetStorageError(
                    f"cannot extract {archive.name} into {root}: "
                    f"{validate.storage_problem(exc)}; the archive verified and is kept: "
                    f"make room (or fix the permissions) and call load_cifar again"
                ) from exc
            raise DatasetError(
                f"{archive}: cannot read the archive ({type(exc).__name__}: {exc}) although its "
                f"checksum verified; check the disk it is on"
            ) from exc
        except (tarfile.TarError, EOFError, zlib.error) as exc:
            # the archive passed its MD5 check before extraction, so the file is the expected one
            raise DatasetError(
                f"{archive}: its checksum verified but it cannot be read as a tar archive "
                f"({type(exc).__name__}: {exc}); was the md5 given for another file?"
            ) from exc
        digests: dict[str, str] = {}
        data = _read_folder(
            tmp / layout.folder,
            layout,
            describe=lambda name: f"{archive}: member {layout.folder}/{name}",
            digests=digests,
        )
        _write_checksums(tmp / layout.folder, digests)  # recorded now, checked before every later use
        final = root / layout.folder
        try:
            os.rename(tmp / layout.folder, final)
        except OSError:
            if not final.is_dir():  # another process may have extracted it meanwhile: then use theirs
                raise
        return data
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _where_to_put_it(root: Path, layout: CifarLayout, md5: str) -> str:
    return (
        f"Without network access, download {layout.archive} on a machine that has it (from {layout.url}, "
        f"MD5 {md5}) and put it at {root / layout.archive}, or put its extracted folder at "
        f"{root / layout.folder}; then call load_cifar again."
    )


def download_archive(url: str, destination: str | os.PathLike, md5: str, timeout: float = 10.0) -> Path:
    """Download ``url`` to ``destination`` (through a temporary file beside it), verify its MD5, then rename.

    Raises :class:`DatasetDownloadError` when the download fails (``timeout`` seconds per network
    operation) and :class:`DatasetError` when the checksum differs; no partial file is left either way."""
    validate.instance("url", url, str, what="a URL string")
    validate.instance("md5", md5, str, what="a string of 32 hexadecimal digits")
    timeout = validate.positive_float("timeout", timeout)
    destination = Path(validate.path("destination", destination))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".part", dir=destination.parent)
    except OSError as exc:
        raise DatasetStorageError(f"cannot write in {destination.parent}: {validate.describe_os_error(exc)}") from exc
    tmp = Path(tmp_name)
    try:
        digest = hashlib.md5()
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
                for chunk in iter(lambda: response.read(1 << 20), b""):
                    digest.update(chunk)
                    out.write(chunk)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if validate.storage_problem(exc) and not isinstance(exc, urllib.error.URLError):
                raise DatasetStorageError(
                    f"cannot save the download in {destination.parent}: "
                    f"{validate.storage_problem(exc)}; nothing was kept"
                ) from exc
            reason = (
                f"HTTP {exc.code} {exc.reason}"
                if isinstance(exc, urllib.error.HTTPError)
                else getattr(exc, "reason", exc)
            )
            raise DatasetDownloadError(f"could not download {url}: {reason}") from exc
        if digest.hexdigest() != md5:
            raise DatasetError(
                f"{url}: the downloaded file has MD5 {digest.hexdigest()}, expected {md5}; it was not kept"
            )
        os.replace(tmp, destination)
        return destination
    finally:
        tmp.unlink(missing_ok=True)


def load_cifar(
    root: str | os.PathLike,
    name: str = "cifar10",
    download: bool = False,
    *,
    md5: str | None = None,
    url: str | None = None,
    timeout: float = 10.0,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """CIFAR-10 or CIFAR-100 as ``{"train": (images, labels), "test": (images, labels)}``.

    Images are uint8 ``(N, 3, 32, 32)`` in file order (training batches 1..5 concatenated for CIFAR-10),
    labels int64 ``(N,)`` (CIFAR-100: the fine labels, 0..99).

    Looks in ``root`` for, in this order:

    1. the extracted folder (``cifar-10-batches-bin/`` or ``cifar-100-binary/``): each batch file is checked to
       be whole records with valid labels and to have the SHA-256 recorded in its ``SHA256SUMS`` when the
       archive was extracted (a folder without that record is refused: see :func:`record_checksums`);
    2. the official binary archive (``cifar-10-binary.tar.gz`` / ``cifar-100-binary.tar.gz``): its MD5 is
       checked against ``md5`` (default: :data:`EXPECTED_MD5` for its file name), then it is extracted
       into a temporary folder in ``root``, every batch is checked, and the folder is renamed into place;
       a link, a special file or a member path leaving the folder makes it refuse the whole archive;
    3. with ``download=True``: the archive is fetched from ``url`` (default: the dataset authors' address in
       :data:`CIFAR_LAYOUTS`), verified, kept in ``root``, then extracted as in 2.

    Every problem raises a :class:`DatasetError` naming the file (and member) at fault; nothing
    half-written is left in ``root``. Records are parsed with numpy; nothing is ever unpickled.
    """
    layout = CIFAR_LAYOUTS[validate.choice("name", name, sorted(CIFAR_LAYOUTS))]
    root = Path(validate.path("root", root))
    download = validate.boolean("download", download)
    expected = (
        validate.instance("md5", md5, str, what="a string of 32 hexadecimal digits")
        if md5 is not None
        else EXPECTED_MD5[layout.archive]
    ).lower()
    if len(expected) != 32 or any(ch not in "0123456789abcdef" for ch in expected):
        raise ValueError(f"md5 must be 32 hexadecimal digits, got {md5!r}")
    if url is not None:
        validate.instance("url", url, str, what="a URL string")
    timeout = validate.positive_float("timeout", timeout)
    folder, archive = root / layout.folder, root / layout.archive
    if folder.is_dir():
        return _read_verified_folder(folder, layout)
    if not archive.is_file():
        if not download:
            raise DatasetNotFoundError(
                f"{layout.title} not found: neither {folder} nor {archive} exists. Call "
                f"load_cifar(..., download=True) to fetch it from {layout.url}. "
                + _where_to_put_it(root, layout, expected)
            )
        created = [p for p in (root, *root.parents) if not p.exists()]  # deepest first
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatasetStorageError(
                f"cannot create the data folder {root}: {validate.describe_os_error(exc)}"
            ) from exc
        try:
            download_archive(url or layout.url, archive, expected, timeout)
        except DatasetError as exc:
            for p in created:  # a failed download leaves no empty folder tree behind
                try:
                    p.rmdir()
                except OSError:
                    break
            if isinstance(exc, DatasetDownloadError):
                raise DatasetDownloadError(f"{exc}. " + _where_to_put_it(root, layout, expected)) from exc
            raise
    actual = file_md5(archive)
    if actual != expected:
        raise DatasetError(
            f"{archive}: MD5 checksum mismatch (got {actual}, expected {expected}); the file is "
            "damaged or incomplete: delete it and download it again"
        )
    return _extract_archive(archive, root, layout)


# --- augmentation on the device -------------------------------------------------------------------
_GENERATOR = "a torch.Generator (for reproducible draws)"


def draw_augmentation(
    batch_size: int, generator: torch.Generator, pad: int = 4, flip: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The random choices for one batch, in this order: row offsets, column offsets (each uniform in
    ``0..2*pad``), then flips (``True`` with probability 1/2; all ``False`` and no draw when ``flip`` is
    off). Returned on the generator's device."""
    validate.instance("generator", generator, torch.Generator, what=_GENERATOR)
    pad = validate.non_negative_int("pad", pad)
    batch_size = validate.non_negative_int("batch_size", batch_size)
    validate.check_budget("batch_size", 24.0 * batch_size, validate.memory_limit_bytes(), value=batch_size)
    flip = validate.boolean("flip", flip)
    dev = generator.device
    rows = torch.randint(0, 2 * pad + 1, (batch_size,), generator=generator, device=dev)
    cols = torch.randint(0, 2 * pad + 1, (batch_size,), generator=generator, device=dev)
    if flip:
        flips = torch.rand(batch_size, generator=generator, device=dev) < 0.5
    else:
        flips = torch.zeros(batch_size, dtype=torch.bool, device=dev)
    return rows, cols, flips


def crop_and_flip(
    x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, flips: torch.Tensor, pad: int
) -> torch.Tensor:
    """Zero-pad ``x`` (N, C, H, W) by ``pad`` on every side, take the H x W window whose top-left corner is
    ``(rows[i], cols[i])`` in the padded image, and mirror it left-right where ``flips[i]``. One gather."""
    pad = validate.non_negative_int("pad", pad)
    validate.tensor("x", x, ndim=4, shape_text="(N, C, H, W)")
    n, c, h, w = x.shape
    for name, t in (("rows", rows), ("cols", cols), ("flips", flips)):
        validate.tensor(name, t, shape=(n,))
    dev = x.device
    rows, cols, flips = rows.to(dev), cols.to(dev), flips.to(dev)
    if pad:
        padded = float(n) * c * (h + 2 * pad) * (w + 2 * pad) * x.element_size()
        validate.check_budget("pad", padded, validate.memory_limit_bytes(), value=pad)
        x = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    j = torch.arange(w, device=dev)
    col_index = cols[:, None] + torch.where(flips[:, None], w - 1 - j, j)  # (N, W)
    row_index = rows[:, None] + torch.arange(h, device=dev)  # (N, H)
    batch_index = torch.arange(n, device=dev)[:, None, None, None]
    chan_index = torch.arange(c, device=dev)[None, :, None, None]
    return x[batch_index, chan_index, row_index[:, None, :, None], col_index[:, None, None, :]]


def augment_batch(
    x: torch.Tensor, generator: torch.Generator, pad: int = 4, flip: bool = True, return_params: bool = False
):
    """Random crop after zero padding by ``pad`` pixels, and random horizontal flip, for a whole batch.

    ``x``: float (N, C, H, W) on any device. The random choices come from :func:`draw_augmentation` (one
    call, on the generator's device). With ``return_params=True`` returns ``(augmented, (rows, cols,
    flips))``. For 8x8 digits use ``pad=1, flip=False``: a mirrored digit is another symbol.
    """
    validate.tensor("x", x, ndim=4, shape_text="(N, C, H, W)")
    params = draw_augmentation(x.shape[0], generator, pad, flip)
    out = crop_and_flip(x, *params, pad=pad)
    return (out, params) if return_params else out


# --- the dataset on the device ----------------------------------------------------------------------
def _as_tensor(array, name: str) -> torch.Tensor:
    validate.instance(name, array, (np.ndarray, torch.Tensor), what="a numpy array or a torch tensor")
    return torch.from_numpy(np.ascontiguousarray(array)) if isinstance(array, np.ndarray) else array


def _channel_stats(values, name: str, channels: int) -> torch.Tensor:
    arr = validate.finite_array(name, values).ravel()
    if arr.size != channels:
        raise ValueError(f"{name} must have one entry per channel ({channels}), got {arr.size}")
    return torch.from_numpy(arr.astype(np.float32))


STANDARDIZE = ("channel", "image")


def standardize_per_image(x: torch.Tensor) -> torch.Tensor:
    """TensorFlow's ``per_image_standardization`` for a batch ``(N, C, H, W)``: each image minus its mean
    over all its pixels and channels, divided by ``max(std, 1 / sqrt(C H W))`` (population std)."""
    validate.tensor("x", x, ndim=4, floating=True, shape_text="(N, C, H, W)")
    flat = x.flatten(1)
    mean = flat.mean(1, keepdim=True)
    floor = 1.0 / math.sqrt(flat.shape[1])
    std = flat.std(1, keepdim=True, unbiased=False).clamp_min(floor)
    return ((flat - mean) / std).view_as(x)


class DeviceData:
    """One split held on ``device`` as normalised float32 images ``(N, C, H, W)`` and int64 labels.

    ``images_uint8``: uint8 ``(N, C, H, W)`` (numpy or torch); ``labels``: integer ``(N,)``. Pixels are
    scaled to [0, 1] and standardised per channel: ``(x / 255 - mean[c]) / std[c]``. When ``mean``/``std``
    are not given they are computed from these images (pass the training split's ``.mean`` and ``.std``
    when building the test split). Both are on the [0, 1] scale, one value per channel.

    ``standardize="image"`` (the TensorFlow ResNet recipe) keeps the pixels on the [0, 1] scale instead
    (``mean``/``std`` are computed but not applied) and standardises every batch image by image after its
    augmentation (:func:`standardize_per_image`), at test time too.
    """

    def __init__(
        self,
        images_uint8,
        labels,
        device="cpu",
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        standardize: str = "channel",
    ):
        self.standardize = validate.choice("standardize", standardize, STANDARDIZE)
        images = _as_tensor(images_uint8, "images_uint8")
        labels = _as_tensor(labels, "labels")
        if images.dtype != torch.uint8:
            raise TypeError(f"images_uint8 must have dtype uint8 (raw pixels), got {images.dtype}")
        validate.tensor("images_uint8", images, ndim=4, shape_text="(N, C, H, W)")
        if images.shape[0] == 0:
            raise ValueError(f"images_uint8 holds no image (shape {tuple(images.shape)})")
        if labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
            raise TypeError(f"labels must hold integers, got dtype {labels.dtype}")
        validate.integer_array("labels", labels, ndim=1, minimum=0)
        if labels.shape[0] != images.shape[0]:
            raise ValueError(f"{images.shape[0]} images but {labels.shape[0]} labels")
        self.device = validate.torch_device("device", device)
        channels = images.shape[1]
        scaled = images.to(self.device).float().div_(255.0)
        if mean is None:
            mean = scaled.mean(dim=(0, 2, 3)).cpu()
        if std is None:
            std = scaled.std(dim=(0, 2, 3)).cpu()
        self.mean = _channel_stats(mean, "mean", channels)
        self.std = _channel_stats(std, "std", channels)
        if (self.std <= 0).any():
            raise ValueError(
                f"std must be positive in every channel, got {self.std.tolist()} "
                "(a constant channel cannot be standardised)"
            )
        view = (1, channels, 1, 1)
        if standardize == "channel":
            scaled = scaled.sub_(self.mean.to(self.device).view(view)).div_(self.std.to(self.device).view(view))
        self.images = scaled
        self.labels = labels.to(self.device, torch.int64)

    def __len__(self) -> int:
        return self.images.shape[0]

    def num_batches(self, batch_size: int, drop_last: bool = True) -> int:
        """Batches per pass over the split."""
        batch_size = validate.positive_int("batch_size", batch_size)
        drop_last = validate.boolean("drop_last", drop_last)
        return len(self) // batch_size if drop_last else math.ceil(len(self) / batch_size)

    def batches(
        self,
        batch_size: int,
        generator: torch.Generator | None = None,
        augment: bool = False,
        shuffle: bool = True,
        drop_last: bool = True,
        pad: int = 4,
        flip: bool = True,
        start_batch: int = 0,
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """One pass over the split as ``(x, y)`` batches on the device.

        Draws, in order: the permutation (``torch.randperm`` of N, when ``shuffle``), then for each batch
        the augmentation choices (:func:`draw_augmentation`, when ``augment``). ``start_batch=k`` skips the
        first k batches while consuming exactly the random numbers they would have used, so an epoch
        restarted from the generator state saved at its start continues as if never interrupted.
        A ``generator`` is required when shuffling or augmenting.
        """
        batch_size = validate.positive_int("batch_size", batch_size)
        n_batches = self.num_batches(batch_size, drop_last)
        pad = validate.non_negative_int("pad", pad)
        shuffle, augment, flip = (
            validate.boolean(k, v) for k, v in (("shuffle", shuffle), ("augment", augment), ("flip", flip))
        )
        start_batch = validate.integer("start_batch", start_batch, minimum=0, maximum=n_batches)
        if (shuffle or augment) and generator is None:
            raise ValueError("shuffling or augmenting needs a torch.Generator (for reproducible draws)")
        if generator is not None:
            validate.instance("generator", generator, torch.Generator, what=_GENERATOR)
        n = len(self)
        if shuffle:
            order = torch.randperm(n, generator=generator, device=generator.device).to(self.device)
        else:
            order = torch.arange(n, device=self.device)
        return self._iterate(order, batch_size, n_batches, generator, augment, pad, flip, start_batch)

    def _iterate(self, order, batch_size, n_batches, generator, augment, pad, flip, start_batch):
        n = len(self)
        for b in range(n_batches):
            index = order[b * batch_size : min((b + 1) * batch_size, n)]
            if augment:
                params = draw_augmentation(index.shape[0], generator, pad, flip)
            if b < start_batch:
                continue
            x = self.images[index]
            if augment:
                x = crop_and_flip(x, *params, pad=pad)
            if self.standardize == "image":
                x = standardize_per_image(x)
            yield x, self.labels[index]

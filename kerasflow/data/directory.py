"""Datasets from a directory of files, one subdirectory per class (Keras 3's
``keras.utils.text_dataset_from_directory`` / ``image_dataset_from_directory``).

Files are indexed as Keras indexes them (class names are the sorted
subdirectory names; files sorted within each; with ``shuffle`` the list is
permuted by ``np.random.RandomState(seed)``, labels by the same seed), so a
``validation_split`` with a seed gives the split Keras gives. The files are
read into memory and served by a ``kerasflow.data.Dataset`` of batches
(``(inputs, labels)``, or inputs alone with ``labels=None``), shuffled per
epoch through a buffer of ``8 * batch_size`` for training.
"""

from __future__ import annotations

import os

import numpy as np

from kerasflow.data.dataset import Dataset
from kerasflow.utils import image_utils
from kerasflow.utils.io_utils import print_msg

__all__ = ["image_dataset_from_directory", "index_directory",
           "text_dataset_from_directory"]

_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def index_directory(directory, labels, formats, class_names=None, shuffle=True,
                    seed=None, follow_links=False, verbose=True):
    """``(file_paths, labels, class_names)`` of the files under ``directory``
    whose names end with one of ``formats`` (Keras' ``index_directory``).

    Raises:
        ValueError: ``class_names`` not among the subdirectories, or given with
            explicit labels; explicit labels of another length than the files.
    """
    if labels == "inferred":
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d))
                   and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names) <= set(subdirs):
                raise ValueError(f"The `class_names` passed did not match the names "
                                 f"of the subdirectories of the target directory. "
                                 f"Expected: {subdirs} (or a subset of it), but "
                                 f"received: class_names={class_names}")
            subdirs = list(class_names)
    else:
        if class_names is not None:
            raise ValueError("`class_names` can only be passed with "
                             "labels='inferred'.")
        subdirs = [""]
    filenames, file_labels = [], []
    for index, subdir in enumerate(subdirs):
        root_dir = os.path.join(directory, subdir)
        for root, files in _walk(root_dir, follow_links):
            for fname in sorted(files):
                if fname.lower().endswith(formats):
                    rel = os.path.relpath(os.path.join(root, fname), root_dir)
                    filenames.append(os.path.join(subdir, rel))
                    file_labels.append(index)
    if labels == "inferred":
        labels = np.asarray(file_labels, dtype="int32")
        names = list(subdirs)
    elif labels is None:
        names = None
    else:
        if len(labels) != len(filenames):
            raise ValueError(f"Expected the lengths of `labels` to match the number "
                             f"of files in the target directory. len(labels) is "
                             f"{len(labels)} while we found {len(filenames)} files "
                             f"in directory {directory}.")
        names = [str(label) for label in sorted(set(labels))]
        labels = np.asarray(labels)
    if verbose:
        print_msg(f"Found {len(filenames)} files" + (
            "." if labels is None else f" belonging to {len(names)} classes."))
    paths = [os.path.join(directory, f) for f in filenames]
    if shuffle:
        seed = np.random.randint(int(1e6)) if seed is None else seed
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, names


def _walk(root_dir, follow_links) -> list:
    """``(folder, file names)`` under ``root_dir`` sorted by folder, each real
    folder once: with ``follow_links`` a symlink loop (``a/b -> a``) ends."""
    seen, out = set(), []
    for root, dirs, files in os.walk(root_dir, followlinks=follow_links):
        dirs.sort()  # the first path to reach a real folder is the same everywhere
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        out.append((root, files))
    return sorted(out, key=lambda w: w[0])


def _check_args(labels, label_mode, class_names, validation_split, subset, shuffle,
                seed):
    if labels not in ("inferred", None) and not isinstance(labels, (list, tuple)):
        raise ValueError(f"`labels` argument should be a list/tuple of integer "
                         f"labels, of the same size as the number of files in the "
                         f"target directory, 'inferred' or None. Received: "
                         f"labels={labels}")
    if labels not in ("inferred", None) and class_names:
        raise ValueError(f'You can only pass `class_names` if `labels="inferred"`. '
                         f"Received: labels={labels}, and class_names={class_names}")
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(f'`label_mode` argument must be one of "int", '
                         f'"categorical", "binary", or None. Received: '
                         f"label_mode={label_mode}")
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if bool(validation_split) != bool(subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and "
                         "inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f'`subset` must be either "training", "validation" or '
                         f'"both", received: {subset}')
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you "
                         "must provide a `seed` argument, to make sure that there "
                         "is no overlap between the training and validation "
                         "subset.")


def _split(paths, labels, validation_split, subset):
    if not validation_split:
        return paths, labels
    n_val = int(validation_split * len(paths))
    cut = slice(None, -n_val) if subset == "training" else slice(-n_val, None)
    return paths[cut], None if labels is None else labels[cut]


def _labels(labels, label_mode, num_classes):
    if label_mode == "binary":
        return labels.astype("float32").reshape(-1, 1)
    if label_mode == "categorical":
        return np.eye(num_classes, dtype="float32")[labels]
    return labels


def _build(load, directory, labels, label_mode, class_names, batch_size, shuffle,
           seed, validation_split, subset, follow_links, verbose, formats, what):
    if labels is None or label_mode is None:
        labels, label_mode = None, None
    _check_args(labels, label_mode, class_names, validation_split, subset, shuffle,
                seed)
    seed = np.random.randint(int(1e6)) if seed is None else seed
    paths, labels, class_names = index_directory(
        directory, labels, formats, class_names, shuffle, seed, follow_links,
        verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f'When passing `label_mode="binary"`, there must be '
                         f"exactly 2 class_names. Received: class_names="
                         f"{class_names}")

    def dataset(part, train):
        part_paths, part_labels = _split(paths, labels, validation_split, part)
        if not part_paths:
            raise ValueError(f"No {part or ''} {what} files found in directory "
                             f"{directory}. Allowed formats: {formats}")
        inputs = load(part_paths)
        if part_labels is None:
            ds = Dataset.from_tensor_slices(inputs)
        else:
            ds = Dataset.from_tensor_slices(
                (inputs, _labels(part_labels, label_mode, len(class_names))))
        if shuffle and train:
            ds = ds.shuffle((batch_size or 128) * 8, seed=seed)
        if batch_size is not None:
            ds = ds.batch(batch_size)
        ds.class_names, ds.file_paths = class_names, part_paths
        return ds

    if subset == "both":
        return dataset("training", True), dataset("validation", False)
    return dataset(subset, True)


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None,
                                shuffle=True, seed=None, validation_split=None,
                                subset=None, follow_links=False, format="tf",
                                verbose=True):
    """A dataset of ``(texts, labels)`` batches from ``.txt`` files (Keras 3).

    Args:
        directory: holds one subdirectory of ``.txt`` files per class (with
            ``labels="inferred"``).
        labels: "inferred", a list of int labels in file order, or None.
        label_mode: "int" (int32 (batch,)), "categorical" (float32
            (batch, classes)), "binary" (float32 (batch, 1)) or None.
        class_names: the subdirectories to use, in label order.
        batch_size: int or None (unbatched elements).
        max_length: keep at most this many characters of each text.
        shuffle, seed: shuffle the files (and each epoch's order).
        validation_split, subset: a fraction held out, and "training",
            "validation" or "both" (a pair of datasets).
        follow_links: follow symbolic links to subdirectories (each real
            folder is read once, so a link back to a parent ends).
        format: accepted for Keras compatibility ("tf" or "grain"); kerasflow
            returns its own ``Dataset`` either way.
        verbose: print how many files were found.

    Returns:
        A ``kerasflow.data.Dataset`` (texts as a numpy str array) with
        ``class_names``; a pair of them for ``subset="both"``.

    Raises:
        ValueError: invalid arguments (as Keras), or no files found.
    """
    if format not in ("tf", "grain"):
        raise ValueError(f'`format` should be either "tf" or "grain". Received: '
                         f"format={format}")

    def load(paths):
        texts = []
        for path in paths:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            texts.append(text[:max_length] if max_length is not None else text)
        return np.asarray(texts, dtype=str)

    return _build(load, directory, labels, label_mode, class_names, batch_size,
                  shuffle, seed, validation_split, subset, follow_links, verbose,
                  (".txt",), "text")


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None,
                                 interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                                 data_format=None, format="tf", verbose=True):
    """A dataset of ``(images, labels)`` batches from image files (Keras 3);
    images float32 (batch, height, width, channels) with channels 1, 3 or 4
    for ``color_mode`` "grayscale", "rgb" or "rgba". Decoding needs Pillow.

    Args, returns and errors as ``text_dataset_from_directory``, plus:
        image_size: (height, width) every image is resized to.
        interpolation: as ``kerasflow.ops.image.resize``.
        crop_to_aspect_ratio: crop the centre to the target's aspect ratio
            first (``smart_resize``).
        pad_to_aspect_ratio: not offered (raises NotImplementedError).
        data_format: "channels_last" (default) or "channels_first".

    Raises:
        ImportError: no Pillow. NotImplementedError: pad_to_aspect_ratio.
    """
    if pad_to_aspect_ratio:
        raise NotImplementedError("image_dataset_from_directory(pad_to_aspect_ratio"
                                  "=True) is not offered by kerasflow; use "
                                  "crop_to_aspect_ratio=True.")
    modes = {"rgb": "rgb", "rgba": "rgba", "grayscale": "grayscale"}
    if color_mode not in modes:
        raise ValueError(f'`color_mode` must be one of {{"rgb", "rgba", '
                         f'"grayscale"}}. Received: color_mode={color_mode}')
    data_format = data_format or "channels_last"
    from kerasflow.ops import image as image_ops  # noqa: PLC0415

    def load(paths):
        out = []
        for path in paths:
            x = image_utils.img_to_array(image_utils.load_img(path, modes[color_mode]),
                                         "channels_last", "float32")
            if crop_to_aspect_ratio:
                x = image_utils.smart_resize(x, image_size, interpolation)
            else:
                x = np.asarray(image_ops.resize(x, tuple(image_size),
                                                interpolation=interpolation))
            out.append(x if data_format == "channels_last" else x.transpose(2, 0, 1))
        return np.stack(out).astype("float32")

    return _build(load, directory, labels, label_mode, class_names, batch_size,
                  shuffle, seed, validation_split, subset, follow_links, verbose,
                  _IMAGE_FORMATS, "image")

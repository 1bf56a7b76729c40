"""Keras 2 programs with only the import changed, trained on real MNIST.

Ported (structure, layer sizes and loss as published; fewer epochs/samples):
- keras-team/keras 2.x ``examples/variational_autoencoder.py`` (the MLP VAE:
  ``Lambda`` sampling with ``K.random_normal(shape=(K.shape(z_mean)[0], dim))``,
  the loss built from raw backend ops and ``vae.add_loss``);
- eriklindernoren/Keras-GAN ``gan/gan.py`` (``LeakyReLU(alpha=0.2)``,
  ``BatchNormalization(momentum=0.8)``, a discriminator compiled, then frozen
  with ``trainable = False`` inside the combined model).
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.layers import (
    BatchNormalization,
    Dense,
    Flatten,
    Input,
    Lambda,
    LeakyReLU,
    Reshape,
)
from kerasflow.losses import binary_crossentropy
from kerasflow.models import Model, Sequential
from kerasflow.optimizers import Adam


@pytest.fixture(scope="module")
def mnist(data_dir):
    (x_train, _), (x_test, _) = kf.datasets.mnist.load_data(
        path=str(data_dir / "mnist"))
    return x_train, x_test


def test_keras2_vae_trains_and_its_loss_falls(mnist):
    kf.utils.set_random_seed(0)
    x_train = mnist[0][:6000].reshape(-1, 784).astype("float32") / 255
    x_test = mnist[1][:1000].reshape(-1, 784).astype("float32") / 255
    original_dim, intermediate_dim, latent_dim = 784, 256, 2

    def sampling(args):
        z_mean, z_log_var = args
        batch = K.shape(z_mean)[0]
        dim = K.int_shape(z_mean)[1]
        epsilon = K.random_normal(shape=(batch, dim))
        return z_mean + K.exp(0.5 * z_log_var) * epsilon

    inputs = Input(shape=(original_dim,), name="encoder_input")
    x = Dense(intermediate_dim, activation="relu")(inputs)
    z_mean = Dense(latent_dim, name="z_mean")(x)
    z_log_var = Dense(latent_dim, name="z_log_var")(x)
    z = Lambda(sampling, output_shape=(latent_dim,), name="z")([z_mean, z_log_var])
    encoder = Model(inputs, [z_mean, z_log_var, z], name="encoder")
    latent_inputs = Input(shape=(latent_dim,), name="z_sampling")
    x = Dense(intermediate_dim, activation="relu")(latent_inputs)
    outputs = Dense(original_dim, activation="sigmoid")(x)
    decoder = Model(latent_inputs, outputs, name="decoder")
    outputs = decoder(encoder(inputs)[2])
    vae = Model(inputs, outputs, name="vae_mlp")

    reconstruction_loss = binary_crossentropy(inputs, outputs) * original_dim
    kl_loss = 1 + z_log_var - K.square(z_mean) - K.exp(z_log_var)
    kl_loss = K.sum(kl_loss, axis=-1) * -0.5
    vae.add_loss(K.mean(reconstruction_loss + kl_loss))
    vae.compile(optimizer="adam")
    history = vae.fit(x_train, epochs=3, batch_size=128,
                      validation_data=(x_test, None), verbose=0).history
    # About 330 -> 200 (train) and 232 -> 194 (validation) nats per image.
    assert history["loss"][-1] < 0.75 * history["loss"][0]
    assert history["val_loss"][-1] < history["val_loss"][0] < 260
    # The sampler draws anew each call: the same input, different codes.
    z1, z2 = encoder.predict(x_test[:4], verbose=0)[2], \
        encoder.predict(x_test[:4], verbose=0)[2]
    assert not np.allclose(z1, z2)


def test_keras2_gan_with_leaky_relu_trains(mnist):
    kf.utils.set_random_seed(0)
    img_shape, latent_dim, batch_size = (28, 28, 1), 100, 32
    optimizer = Adam(0.0002, 0.5)

    def build_generator():
        model = Sequential()
        model.add(Dense(256, input_dim=latent_dim))
        model.add(LeakyReLU(negative_slope=0.2))
        model.add(BatchNormalization(momentum=0.8))
        model.add(Dense(512))
        model.add(LeakyReLU(negative_slope=0.2))
        model.add(BatchNormalization(momentum=0.8))
        model.add(Dense(int(np.prod(img_shape)), activation="tanh"))
        model.add(Reshape(img_shape))
        noise = Input(shape=(latent_dim,))
        return Model(noise, model(noise))

    def build_discriminator():
        model = Sequential()
        model.add(Flatten(input_shape=img_shape))
        model.add(Dense(512))
        model.add(LeakyReLU(negative_slope=0.2))
        model.add(Dense(256))
        model.add(LeakyReLU(negative_slope=0.2))
        model.add(Dense(1, activation="sigmoid"))
        img = Input(shape=img_shape)
        return Model(img, model(img))

    discriminator = build_discriminator()
    discriminator.compile(loss="binary_crossentropy", optimizer=optimizer,
                          metrics=["accuracy"])
    generator = build_generator()
    z = Input(shape=(latent_dim,))
    discriminator.trainable = False  # after compile: D still trains on its own
    combined = Model(z, discriminator(generator(z)))
    combined.compile(loss="binary_crossentropy", optimizer=optimizer)

    x_train = mnist[0][:10000] / 127.5 - 1.0
    x_train = np.expand_dims(x_train, axis=3).astype("float32")
    valid, fake = np.ones((batch_size, 1)), np.zeros((batch_size, 1))
    rng = np.random.RandomState(0)
    d_losses = []
    for _ in range(40):
        imgs = x_train[rng.randint(0, len(x_train), batch_size)]
        noise = rng.normal(0, 1, (batch_size, latent_dim)).astype("float32")
        gen_imgs = generator.predict(noise, verbose=0)
        d_real = discriminator.train_on_batch(imgs, valid)
        d_fake = discriminator.train_on_batch(gen_imgs, fake)
        d_losses.append(0.5 * (d_real[0] + d_fake[0]))
        d_before = [w.copy() for w in discriminator.get_weights()]
        g_before = [w.copy() for w in generator.get_weights()]
        combined.train_on_batch(noise, valid)
        # The combined step moves the generator only.
        for a, b in zip(d_before, discriminator.get_weights()):
            np.testing.assert_array_equal(a, b)
        assert any(not np.array_equal(a, b)
                   for a, b in zip(g_before, generator.get_weights()))
    assert np.mean(d_losses[-10:]) < 0.5 * d_losses[0]  # D learns to tell them
    # Against the frozen discriminator, the generator's loss falls.
    noise = rng.normal(0, 1, (batch_size, latent_dim)).astype("float32")
    g_losses = [float(combined.train_on_batch(noise, valid)) for _ in range(15)]
    assert g_losses[-1] < 0.5 * g_losses[0]

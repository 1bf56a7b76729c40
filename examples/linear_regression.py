"""The lecture's Keras linear regression: y = 2x + noise, fit one sample a step.

Run: python examples/linear_regression.py   (prints a weight near 2)
"""

import numpy as np

import kerasflow as kf
from kerasflow.layers import Dense
from kerasflow.models import Sequential


def main(seed=0):
    np.random.seed(seed)
    trX = np.linspace(-1, 1, 101)
    trY = 2 * trX + np.random.randn(*trX.shape) * 0.33

    model = Sequential()
    model.add(Dense(1, input_shape=(1,)))
    model.compile(optimizer="sgd", loss="mse", metrics=["mse"])
    model.fit(trX, trY, batch_size=1, epochs=10, verbose=0)
    weights = model.get_weights()
    w = float(weights[0].ravel()[0])
    print(f"weight {w:.4f}, bias {float(weights[1][0]):.4f}")
    return w


if __name__ == "__main__":
    _ = kf
    main()

"""Linear regression in the TF1 graph style: placeholders, a Variable, gradients
and a Session, fed one sample at a time (the lecture's program, names changed).

Run: python examples/graph_linear_regression.py   (prints w close to 2)
"""

import numpy as np

from kerasflow.backend import (
    Session, Variable, global_variables_initializer, gradients, placeholder, square,
)


def main(seed=0):
    rng = np.random.RandomState(seed)
    trX = np.linspace(-1, 1, 101)
    trY = 2 * trX + rng.randn(*trX.shape) * 0.33  # y is about 2x plus noise

    x = placeholder("float32")
    y = placeholder("float32")
    w = Variable(0.0, name="weights")
    loss = square(y - x * w)
    (grad,) = gradients(loss, [w])
    train_op = w.assign_sub(0.01 * grad)

    with Session() as sess:
        sess.run(global_variables_initializer())
        for _ in range(10):
            for xi, yi in zip(trX, trY):
                sess.run(train_op, feed_dict={x: xi, y: yi})
        final = float(sess.run(w))
    print(final)
    return final


if __name__ == "__main__":
    main()

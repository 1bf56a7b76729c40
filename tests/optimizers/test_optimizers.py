"""Optimizers: learning, Keras-formula references, clipping, LR, TF1, config."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import optimizers as O
from kerasflow.optimizers import schedules

# -- every optimizer learns a linear model ----------------------------------------
LEARNERS = [
    ("sgd", lambda: O.SGD(0.1), 300),
    ("sgd_nesterov", lambda: O.SGD(0.05, momentum=0.9, nesterov=True), 200),
    ("adam", lambda: O.Adam(0.05), 300),
    ("adam_amsgrad", lambda: O.Adam(0.05, amsgrad=True), 300),
    ("adamw", lambda: O.AdamW(0.05, weight_decay=1e-4), 300),
    # RMSprop's steps stay ~lr near the optimum: a decaying rate settles it.
    ("rmsprop", lambda: O.RMSprop(schedules.CosineDecay(0.05, 300)), 300),
    ("rmsprop_centered", lambda: O.RMSprop(
        schedules.CosineDecay(0.03, 300), momentum=0.5, centered=True), 300),
    ("adagrad", lambda: O.Adagrad(0.5), 300),
]


def _linear_problem(seed=0, n=64):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype("float32")
    w_true = np.array([[1.0], [-2.0], [3.0]], "float32")
    y = x @ w_true + 0.5
    return x, y, w_true


@pytest.mark.parametrize("make,steps", [c[1:] for c in LEARNERS],
                         ids=[c[0] for c in LEARNERS])
def test_learns_a_linear_model(make, steps):
    x_data, y_data, w_true = _linear_problem()
    x = K.placeholder("float32", (None, 3))
    y = K.placeholder("float32", (None, 1))
    w = K.Variable(np.zeros((3, 1), "float32"), name="w")
    b = K.Variable(np.zeros(1, "float32"), name="b")
    loss = K.mean(K.square(K.matmul(x, w) + b - y))
    opt = make()
    train = K.Function([x, y], loss, opt.get_updates(loss, [w, b]))
    first = float(train(x_data, y_data))
    for _ in range(steps):
        last = float(train(x_data, y_data))
    assert first > 10.0
    assert last < 1e-3
    np.testing.assert_allclose(w.numpy(), w_true, atol=0.05)
    assert int(opt.iterations.numpy()) == steps + 1


# -- the first steps equal a numpy transcription of Keras 3's formulas ---------------
W0 = np.array([[0.5, -1.0], [2.0, 0.25]])
B0 = np.array([0.1, -0.2])
T = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
X0 = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]])
XS = [X0, 0.1 * X0, 0.5 * X0]  # shrinking gradients: AMSGrad's max matters


def _numpy_grads(w, b, x):
    r = x @ w + b - T.astype(w.dtype)  # loss = 0.5 * sum(r**2)
    return [x.T @ r, r.sum(axis=0)]


def _reference_step(kind, cfg, lr, t, w, g, st):
    """One Keras 3 update of ``w`` with gradient ``g``; ``st`` holds the slots."""
    if cfg.get("weight_decay"):
        w = w - w * cfg["weight_decay"] * lr
    if kind == "sgd":
        mom = cfg["momentum"]
        if not mom:
            return w - g * lr
        st["m"] = st.get("m", 0 * w) * mom - g * lr
        return w + (st["m"] * mom - g * lr if cfg["nesterov"] else st["m"])
    if kind == "adam":
        b1, b2 = cfg["beta_1"], cfg["beta_2"]
        st["m"] = st.get("m", 0 * w) + (g - st.get("m", 0 * w)) * (1 - b1)
        st["v"] = st.get("v", 0 * w) + (g * g - st.get("v", 0 * w)) * (1 - b2)
        v = st["v"]
        if cfg["amsgrad"]:
            st["vh"] = np.maximum(st.get("vh", 0 * w), st["v"])
            v = st["vh"]
        # Keras casts the betas to the variable's dtype before the powers.
        d = w.dtype.type
        alpha = d(lr) * np.sqrt(1 - d(b2) ** d(t)) / (1 - d(b1) ** d(t))
        return w - st["m"] * alpha / (np.sqrt(v) + cfg["epsilon"])
    if kind == "rmsprop":
        rho, eps = cfg["rho"], cfg["epsilon"]
        st["v"] = rho * st.get("v", 0 * w) + (1 - rho) * g * g
        if cfg["centered"]:
            st["mg"] = rho * st.get("mg", 0 * w) + (1 - rho) * g
            denom = st["v"] - st["mg"] ** 2 + eps
        else:
            denom = st["v"] + eps
        inc = lr * g / np.sqrt(denom)
        if cfg["momentum"] > 0:
            st["mom"] = cfg["momentum"] * st.get("mom", 0 * w) + inc
            return w - st["mom"]
        return w - inc
    if kind == "adagrad":
        st["acc"] = st.get("acc", 0 * w + cfg["initial_accumulator_value"]) + g * g
        return w - lr * g / np.sqrt(st["acc"] + cfg["epsilon"])
    raise AssertionError(kind)


REFERENCE_CASES = [
    ("sgd", O.SGD, {"learning_rate": 0.1}),
    ("sgd", O.SGD, {"learning_rate": 0.1, "momentum": 0.9}),
    ("sgd", O.SGD, {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True,
                    "weight_decay": 0.1}),
    ("adam", O.Adam, {"learning_rate": 0.1}),
    ("adam", O.Adam, {"learning_rate": 0.1, "beta_2": 0.5, "amsgrad": True}),
    ("adam", O.AdamW, {"learning_rate": 0.1, "weight_decay": 0.1}),
    ("adam", O.Adam, {"learning_rate": schedules.ExponentialDecay(0.1, 1, 0.5)}),
    ("rmsprop", O.RMSprop, {"learning_rate": 0.1}),
    ("rmsprop", O.RMSprop, {"learning_rate": 0.1, "momentum": 0.5,
                            "centered": True}),
    ("adagrad", O.Adagrad, {"learning_rate": 0.1}),
]


def _run_against_reference(kind, cls, kwargs, dtype, rtol):
    opt = cls(**kwargs)
    cfg = opt.get_config()
    x = K.placeholder(dtype, (None, 2))
    w = K.Variable(W0.astype(dtype))
    b = K.Variable(B0.astype(dtype))
    loss = 0.5 * K.sum(K.square(K.matmul(x, w) + b - T.astype(dtype)))
    train = K.Function([x], loss, opt.get_updates(loss, [w, b]))
    # The reference computes in ``dtype`` too: the bias gradient comes from a
    # cancelling sum, so float32 grads differ from float64 ones by more than 1e-5.
    ref = [W0.astype(dtype), B0.astype(dtype)]
    states = [{}, {}]
    lr_of = kwargs["learning_rate"]
    for t, x_np in enumerate(XS, start=1):
        lr = float(lr_of(t - 1)) if callable(lr_of) else lr_of
        grads = _numpy_grads(*ref, x_np.astype(dtype))
        ref = [_reference_step(kind, cfg, lr, t, p, g, s)
               for p, g, s in zip(ref, grads, states)]
        train(x_np.astype(dtype))
        np.testing.assert_allclose(w.numpy(), ref[0], rtol=rtol, atol=rtol * 1e-2)
        np.testing.assert_allclose(b.numpy(), ref[1], rtol=rtol, atol=rtol * 1e-2)
    assert not np.allclose(ref[0], W0)
    return ref


@pytest.mark.parametrize("kind,cls,kwargs", REFERENCE_CASES,
                         ids=[f"{c[1].__name__}-{i}" for i, c in
                              enumerate(REFERENCE_CASES)])
def test_first_steps_match_numpy_reference_float64(kind, cls, kwargs, float64):
    _run_against_reference(kind, cls, kwargs, "float64", rtol=1e-10)


@pytest.mark.parametrize("kind,cls,kwargs", REFERENCE_CASES[3:6],
                         ids=["Adam", "Adam-amsgrad", "AdamW"])
def test_first_steps_match_numpy_reference_float32(kind, cls, kwargs):
    _run_against_reference(kind, cls, kwargs, "float32", rtol=1e-5)


def test_amsgrad_case_exercises_the_max(float64):
    plain = _run_against_reference("adam", O.Adam, {"learning_rate": 0.1,
                                                    "beta_2": 0.5}, "float64",
                                   rtol=1e-10)
    ams = _run_against_reference(*REFERENCE_CASES[4], "float64", rtol=1e-10)
    assert np.abs(plain[0] - ams[0]).max() > 1e-3


# -- clipping ------------------------------------------------------------------------
def _clipped_sgd_step(**clip):
    # loss = sum(c1 * w1) + sum(c2 * w2): the gradients are c1 = [3, 4] (norm 5)
    # and c2 = [0, 12] (norm 12); the global norm is 13. SGD with lr = 1.
    w1 = K.Variable(np.zeros(2))
    w2 = K.Variable(np.zeros(2))
    loss = K.sum(w1 * np.array([3.0, 4.0])) + K.sum(w2 * np.array([0.0, 12.0]))
    K.Session().run(O.SGD(1.0, **clip).minimize(loss))
    return -w1.numpy(), -w2.numpy()


@pytest.mark.parametrize("clip,expected", [
    ({}, ([3, 4], [0, 12])),
    ({"clipnorm": 1.0}, ([0.6, 0.8], [0, 1])),
    ({"clipnorm": 6.0}, ([3, 4], [0, 6])),
    ({"global_clipnorm": 1.0}, ([3 / 13, 4 / 13], [0, 12 / 13])),
    ({"global_clipnorm": 26.0}, ([3, 4], [0, 12])),
    ({"clipvalue": 3.5}, ([3, 3.5], [0, 3.5])),
], ids=["none", "clipnorm", "clipnorm_partly", "global", "global_inactive",
        "clipvalue"])
def test_clipping_on_a_hand_example(clip, expected, float64):
    got = _clipped_sgd_step(**clip)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_clipnorm_leaves_a_zero_gradient_finite(float64):
    w = K.Variable(np.ones(2))
    K.Session().run(O.SGD(1.0, clipnorm=1.0).minimize(K.sum(w * 0.0)))
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0])


def test_only_one_clipping_argument():
    with pytest.raises(ValueError, match="Only one of `clipnorm`"):
        O.Adam(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="clipnorm"):
        O.SGD(clipnorm=-1.0)


# -- learning rate -----------------------------------------------------------------
def test_learning_rate_setter_changes_the_next_step_of_a_built_function():
    w = K.Variable(np.zeros(1, "float32"))
    opt = O.SGD(0.125)
    step = K.Function([], [], opt.get_updates(K.sum(w), [w]))  # gradient 1
    step()
    assert w.numpy()[0] == -0.125
    opt.learning_rate = 0.5
    assert opt.learning_rate == 0.5
    step()
    assert w.numpy()[0] == -0.625
    assert opt.get_config()["learning_rate"] == 0.5


def test_learning_rate_of_a_schedule_is_not_settable():
    opt = O.Adam(schedules.ExponentialDecay(0.1, 10, 0.5))
    assert opt.learning_rate == pytest.approx(0.1)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.01
    with pytest.raises(TypeError, match="learning_rate"):
        O.Adam(learning_rate="fast")


# -- TF1 style ---------------------------------------------------------------------
def test_gradient_descent_optimizer_minimize_in_a_session():
    # The classic TF1 lecture: fit y = w * x to y = 2x + noise, one sample a step.
    rng = np.random.default_rng(42)
    tr_x = np.linspace(-1, 1, 101)
    tr_y = 2 * tr_x + rng.standard_normal(tr_x.shape) * 0.33
    X = K.placeholder("float32")
    Y = K.placeholder("float32")
    w = K.Variable(0.0, name="weights")
    cost = K.square(Y - X * w)
    train_op = O.GradientDescentOptimizer(0.01).minimize(cost)
    with K.Session() as sess:
        sess.run(K.global_variables_initializer())
        for _ in range(10):
            for x, y in zip(tr_x, tr_y):
                assert sess.run(train_op, feed_dict={X: x, Y: y}) is None
        w_final = float(sess.run(w))
    assert abs(w_final - 2.0) < 0.1
    info = O.train_op_info(train_op)
    assert info.loss is cost and info.var_list == [w]


def test_minimize_trains_only_trainable_variables_the_loss_uses():
    a = K.Variable(1.0)
    frozen = K.Variable(1.0, trainable=False)
    K.Variable(1.0)  # unrelated
    opt = O.SGD(0.5)
    train_op = opt.minimize(K.square(a * frozen))
    assert O.train_op_info(train_op).var_list == [a]
    K.Session().run(train_op)
    assert (float(a.numpy()), float(frozen.numpy())) == (0.0, 1.0)


def test_unconnected_variables_are_skipped_and_all_none_raises():
    a, b = K.Variable(1.0), K.Variable(1.0)
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        updates = O.SGD(0.5).get_updates(K.square(a), [a, b])
    K.Function([], [], updates)()
    assert (float(a.numpy()), float(b.numpy())) == (0.0, 1.0)
    with pytest.raises(ValueError, match="No gradients provided"):
        O.SGD().apply_gradients([(None, b)])


# -- AdamW ---------------------------------------------------------------------------
def test_adamw_decays_weights_and_respects_exclusions(float64):
    # A zero gradient leaves Adam's step at 0, so only the decay moves w:
    # w_n = w_0 * (1 - lr * weight_decay)**n.
    w = K.Variable(np.array([1.0, -2.0]), name="kernel")
    bias = K.Variable(np.array([1.0]), name="bias")
    loss = 0.0 * (K.sum(w) + K.sum(bias))
    opt = O.AdamW(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    plain = O.Adam(learning_rate=0.1)
    step = K.Function([], [], opt.get_updates(loss, [w, bias]))
    for _ in range(3):
        step()
    np.testing.assert_allclose(w.numpy(), np.array([1.0, -2.0]) * 0.95**3,
                               rtol=1e-12)
    np.testing.assert_array_equal(bias.numpy(), [1.0])
    v = K.Variable(np.array([1.0, -2.0]))
    K.Function([], [], plain.get_updates(0.0 * K.sum(v), [v]))()
    np.testing.assert_array_equal(v.numpy(), [1.0, -2.0])
    with pytest.raises(ValueError, match="weight_decay"):
        O.AdamW(weight_decay=None)


# -- config and state --------------------------------------------------------------
ALL = [O.SGD(0.2, momentum=0.5, nesterov=True, clipnorm=1.0),
       O.Adam(0.01, beta_1=0.8, amsgrad=True, global_clipnorm=2.0),
       O.AdamW(0.01, weight_decay=0.1),
       O.RMSprop(schedules.CosineDecay(0.1, 100), centered=True),
       O.Adagrad(0.3, initial_accumulator_value=0.2, clipvalue=0.5),
       O.GradientDescentOptimizer(0.25)]


@pytest.mark.parametrize("opt", ALL, ids=[type(o).__name__ for o in ALL])
def test_get_config_round_trip(opt):
    config = opt.get_config()
    again = type(opt).from_config(config)
    assert again.get_config() == config
    via = O.deserialize(O.serialize(opt))
    assert type(via) is type(opt) and via.get_config() == config
    assert via.learning_rate == pytest.approx(opt.learning_rate)


def test_get():
    assert isinstance(O.get("Adam"), O.Adam)
    assert O.get("sgd").learning_rate == pytest.approx(0.01)
    assert isinstance(O.get("rmsprop"), O.RMSprop)
    assert isinstance(O.get("adagrad"), O.Adagrad)
    assert O.get("adamw").weight_decay == 0.004
    opt = O.Adam()
    assert O.get(opt) is opt
    assert isinstance(O.get({"class_name": "AdamW", "config": {}}), O.AdamW)
    assert isinstance(O.get("adamax"), O.Adamax)  # a Keras 3 name since issue 25
    with pytest.raises(ValueError, match="Could not interpret optimizer"):
        O.get("adamaxx")


def test_weights_restore_continues_identically(float64):
    def model():
        w = K.Variable(W0.copy())
        loss = 0.5 * K.sum(K.square(K.matmul(X0, w) - T))
        return w, loss

    w1, loss1 = model()
    opt1 = O.Adam(0.1, amsgrad=True)
    step1 = K.Function([], [], opt1.get_updates(loss1, [w1]))
    step1()
    step1()
    assert [x.shape for x in opt1.get_weights()] == [(), (2, 2), (2, 2), (2, 2)]
    w2, loss2 = model()
    w2.assign(w1.numpy())
    opt2 = O.Adam(0.1, amsgrad=True)
    with pytest.raises(ValueError, match="build"):
        opt2.set_weights(opt1.get_weights())
    opt2.build([w2])
    opt2.set_weights(opt1.get_weights())
    step2 = K.Function([], [], opt2.get_updates(loss2, [w2]))
    step1()
    step2()
    np.testing.assert_array_equal(w1.numpy(), w2.numpy())
    assert int(opt2.iterations.numpy()) == 3
    slot = opt1.get_slot(w1, "velocity_hat")
    assert any(v is slot for v in opt1.variables)  # `in` would compare elementwise


def test_learning_rate_value_is_float32_scalar():
    """Issue 19: ``learning_rate.value`` is a float32 scalar equal to 0.005, as
    a Keras 3 variable's value (it was the float64 0.004999999888)."""
    opt = O.Adam(learning_rate=0.005)
    value = opt.learning_rate.value
    assert isinstance(value, np.float32) and value == 0.005
    assert opt.learning_rate == 0.005 and not opt.learning_rate != 0.005
    opt.learning_rate = 0.25
    assert opt.learning_rate.value == 0.25 and opt.learning_rate.numpy() == 0.25

"""TF_CONFIG and ClusterSpec on malformed input: a ``task`` that is not an
object, JSON nested too deep for Python's parser, and one address given to two
tasks are refused with ValueError/TypeError naming what was received."""

from __future__ import annotations

import json

import pytest

from kerasflow.distribute.cluster_resolver import (
    ClusterSpec,
    TFConfigClusterResolver,
    load_tf_config,
    parse_ps_tf_config,
    parse_tf_config,
)

CLUSTER = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}


def test_a_task_given_as_a_string_is_refused(monkeypatch):
    conf = json.dumps({"cluster": CLUSTER, "task": "worker"})
    monkeypatch.setenv("TF_CONFIG", conf)
    msg = r"TF_CONFIG's 'task' must be an object like .*Received: 'worker'"
    with pytest.raises(TypeError, match=msg):
        TFConfigClusterResolver()
    with pytest.raises(TypeError, match=msg):
        parse_tf_config(conf)
    with pytest.raises(TypeError, match=msg):
        load_tf_config(conf)


@pytest.mark.parametrize("task, error, msg", [
    ({"type": 3, "index": 0}, TypeError, "task 'type' must be a job name"),
    ({"type": "worker", "index": "one"}, TypeError,
     r"task 'index' must be an int. Received: index='one'"),
    ({"type": "worker", "index": 1.5}, TypeError, "Received: index=1.5"),
    ({"type": "worker", "index": True}, TypeError, "task 'index' must be an int"),
    ({"type": "worker", "index": -1}, ValueError, "must be >= 0. Received: index=-1"),
])
def test_a_task_of_the_wrong_shape_is_refused(task, error, msg):
    with pytest.raises(error, match=msg):
        load_tf_config({"cluster": CLUSTER, "task": task})


def test_json_nested_too_deep_is_a_value_error():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ValueError, match="TF_CONFIG must be JSON of a cluster and a "
                                         "task. Received: 200000 characters nested "
                                         "deeper"):
        load_tf_config(deep)
    with pytest.raises(ValueError, match="nested deeper"):
        parse_tf_config('{"cluster": ' + deep + "}")


@pytest.mark.parametrize("cluster, first, second", [
    ({"worker": ["h1:1", "h1:1"]}, "job 'worker' task 0", "job 'worker' task 1"),
    ({"ps": ["h0:1"], "worker": ["h1:1", "h0:1"]}, "job 'ps' task 0",
     "job 'worker' task 1"),
    ({"ps": ["h0:1"], "worker": {4: "h0:1"}}, "job 'ps' task 0", "job 'worker' task 4"),
])
def test_one_address_for_two_tasks_is_refused_naming_both(cluster, first, second):
    with pytest.raises(ValueError, match=f"ClusterSpec expects one address per "
                                         f"task. Received: 'h.:1' for both {first} "
                                         f"and {second}"):
        ClusterSpec(cluster)


def test_tf_config_with_one_address_twice_is_refused(monkeypatch):
    conf = {"cluster": {"chief": ["h0:1"], "worker": ["h0:1"]},
            "task": {"type": "chief", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(conf))
    with pytest.raises(ValueError, match="'h0:1' for both job 'chief' task 0 and "
                                         "job 'worker' task 0"):
        TFConfigClusterResolver()
    with pytest.raises(ValueError, match="TF_CONFIG's cluster expects one address "
                                         "per task"):
        parse_tf_config(conf)
    with pytest.raises(ValueError, match="both job 'ps' task 0 and job 'worker'"):
        parse_ps_tf_config({"cluster": {"ps": ["a:1"], "worker": ["a:1"]}})

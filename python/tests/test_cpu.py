# SPDX-License-Identifier: Apache-2.0
"""Tests that need no GPU and no PyTorch: the package imports, its names,
errors, flags and reports."""

import json
import logging
import re
import struct
from pathlib import Path

import pytest

import encore
from encore import _encore, _flags, _log, _tree
from encore._errors import error_for

REPO = Path(__file__).resolve().parents[2]


def test_version_is_the_cpp_version():
    text = (REPO / "version.h").read_text()
    parts = [re.search(rf"ENCORE_VERSION_{p} +(\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    assert encore.__version__ == ".".join(parts)


def test_public_names():
    for name in ("method", "Manager", "Method", "check", "eager", "Error", "InvalidArgumentError",
                 "FailedPreconditionError", "ResourceExhaustedError", "UnavailableError", "InternalError"):
        assert hasattr(encore, name), name


def test_error_classes():
    assert issubclass(encore.Error, RuntimeError)
    assert issubclass(encore.InvalidArgumentError, ValueError)
    for cls in (encore.InvalidArgumentError, encore.FailedPreconditionError, encore.ResourceExhaustedError,
                encore.UnavailableError, encore.InternalError):
        assert issubclass(cls, encore.Error)
        assert cls.__module__ == "encore._encore"
    S = _encore.StatusCode
    e = error_for(S.INVALID_ARGUMENT, "method 'f': input 0 has size 4 in dim 1, captured with 3")
    assert type(e) is encore.InvalidArgumentError
    assert e.code == "INVALID_ARGUMENT"
    assert str(e) == e.message == "method 'f': input 0 has size 4 in dim 1, captured with 3"
    assert type(error_for(S.FAILED_PRECONDITION, "x")) is encore.FailedPreconditionError
    assert type(error_for(S.RESOURCE_EXHAUSTED, "x")) is encore.ResourceExhaustedError
    assert type(error_for(S.UNAVAILABLE, "x")) is encore.UnavailableError
    assert type(error_for(S.INTERNAL, "x")) is encore.InternalError
    other = error_for(S.UNIMPLEMENTED, "not here")
    assert type(other) is encore.Error and other.code == "UNIMPLEMENTED"
    assert error_for(S.OK, "") is None
    # Made in Python, as the package's own code does: the class's code.
    assert encore.InvalidArgumentError("bad").code == "INVALID_ARGUMENT"
    assert encore.Error("x").code == "UNKNOWN"
    assert issubclass(_encore.UnsupportedTensorError, encore.InvalidArgumentError)


def test_code_names_agree_with_cpp():
    for code in _encore.StatusCode:
        assert _encore.status_code_name(code.value) == code.name


def test_malformed_flags_text_raises_quoting_the_token():
    with pytest.raises(encore.InvalidArgumentError, match="'warmup=many'") as info:
        encore.Manager(flags="forward:warmup=many")
    assert info.value.code == "INVALID_ARGUMENT"


def test_malformed_environment_flags_name_the_variable(monkeypatch):
    monkeypatch.setenv("ENCORE_METHOD_FLAGS", "forward:colour=red")
    with pytest.raises(encore.InvalidArgumentError, match="ENCORE_METHOD_FLAGS.*colour=red"):
        encore.Manager()


def test_python_only_flags_are_taken_out():
    cxx, py = _flags.split_manager_text("f:warmup=2,outputs=reuse;g:outputs=copy;*:binding=direct")
    assert cxx == "f:warmup=2;*:binding=direct"
    assert py == [("f", {"outputs": "reuse"}), ("g", {"outputs": "copy"})]
    assert _flags.resolve("f", {}, py) == {"outputs": "reuse"}
    assert _flags.resolve("h", {"outputs": "reuse"}, py) == {"outputs": "reuse"}
    assert _flags.resolve("g", {"outputs": "reuse"}, py) == {"outputs": "copy"}  # the manager's text wins
    with pytest.raises(encore.InvalidArgumentError, match="'outputs=bogus'"):
        _flags.split_method_text("outputs=bogus")
    # A manager whose text is only Python flags still parses (and reads no environment).
    encore.Manager(flags="f:outputs=reuse")


def test_negative_budget_is_refused():
    with pytest.raises(encore.InvalidArgumentError, match="graph_memory_budget"):
        encore.Manager(graph_memory_budget=-1)


def test_report_json_of_an_empty_manager():
    r = json.loads(encore.Manager(flags="").report_json())
    assert r["methods"] == []
    assert r["encore_version"] == encore.__version__


def _raw_manager():
    return _encore.Manager.create(";", 0, None, 2)


def test_report_structure_of_a_registered_method():
    m = _raw_manager().register_method("forward", lambda call: None, None, "warmup=2,binding=staged")
    r = json.loads(m.report_json())
    assert r["name"] == "forward"
    assert r["phase"] == "warmup"
    assert r["flags"]["warmup_calls"] == 2
    assert r["flags"]["binding"] == "staged"
    for key in ("calls", "warmup_calls", "captures", "replays", "eager_calls", "refusals", "recaptures",
                "capture_failures", "graphs_off_reason", "captured_input_shapes", "graph_nodes", "binding",
                "binding_reason", "rebind_sites", "memory", "eager_by_reason", "pieces"):
        assert key in r, key


def test_calls_the_python_layer_ran_eagerly_are_in_the_cpp_report():
    m = _raw_manager().register_method("adapted", lambda call: None, [], None)
    m.count_eager_call("host_input")
    m.count_eager_call("autograd")
    m.count_eager_call("host_input")
    r = json.loads(m.report_json())
    assert (r["calls"], r["eager_calls"]) == (3, 3)
    assert r["eager_by_reason"] == {"autograd": 1, "host_input": 2}


def test_method_flags_errors_at_registration():
    manager = _raw_manager()
    with pytest.raises(encore.InvalidArgumentError, match="warmup"):
        manager.register_method("f", lambda call: None, None, "warmup=-1")
    with pytest.raises(encore.InvalidArgumentError, match="without the method's name"):
        manager.register_method("g", lambda call: None, None, "g:warmup=1")
    ok = manager.register_method("h", lambda call: None, None, None)
    assert isinstance(ok, _encore.Method)
    with pytest.raises(encore.Error, match="'h' is already registered") as info:
        manager.register_method("h", lambda call: None, None, None)
    assert info.value.code == "ALREADY_EXISTS"


def test_tree_keys_compare_type_and_value():
    keys = [_tree.leaf_key(v) for v in (2, 2.0, True, "2", None)]
    assert len(set(keys)) == 5
    assert _tree.leaf_key(0.0) != _tree.leaf_key(-0.0)  # floats by their bits
    nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    assert _tree.leaf_key(nan) == _tree.leaf_key(nan)
    a, b = object(), object()
    assert _tree.leaf_key(a) == _tree.leaf_key(a) and _tree.leaf_key(a) != _tree.leaf_key(b)


class _FakeTensor:
    pass


def test_tree_flatten_and_unflatten_round_trip():
    t1, t2 = _FakeTensor(), _FakeTensor()
    tree = (t1, [1, {"k": t2, "s": "x"}], None)
    tensors, nodes, leaves = [], [], []
    _tree.flatten(tree, _FakeTensor, tensors, nodes, leaves)
    assert tensors == [t1, t2]
    assert _tree.unflatten(nodes, tensors, leaves) == tree


def test_refusal_names_the_argument_and_both_values():
    params = ["x", "n"]
    t = _FakeTensor()
    old_nodes = []
    _tree.flatten((t, 2), _FakeTensor, [], old_nodes)
    _tree.flatten({}, _FakeTensor, [], old_nodes)
    paths = _tree.leaf_paths((t, 3), {}, params, _FakeTensor)
    assert _tree.describe_difference(paths, old_nodes) == "argument 'n' is 3, captured with 2"
    paths = _tree.leaf_paths((t, 2.0), {}, params, _FakeTensor)
    assert _tree.describe_difference(paths, old_nodes) == "argument 'n' is 2.0, captured with 2"
    paths = _tree.leaf_paths((t, 2), {"mode": "a"}, params, _FakeTensor)
    assert "keyword arguments" in _tree.describe_difference(paths, old_nodes)


def test_log_levels_follow_the_python_logger():
    lg = logging.getLogger("encore")
    old = lg.level
    try:
        lg.setLevel(logging.DEBUG)
        assert _log.spdlog_level() == 1
        lg.setLevel(logging.WARNING)
        assert _log.spdlog_level() == 3
    finally:
        lg.setLevel(old)


def test_events_reach_python_logging(caplog):
    # A flags text naming a method that is never registered: the Manager's
    # destructor warns, through the Python sink.
    with caplog.at_level(logging.INFO, logger="encore"):
        manager = encore.Manager(flags="never_registered:warmup=1")
        del manager
        import gc
        gc.collect()
    assert any("unknown_method_in_flags" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_making_a_method_without_torch_names_pytorch():
    try:
        import torch  # noqa: F401
        pytest.skip("PyTorch is installed here: the message for its absence cannot be seen")
    except ImportError:
        pass
    with pytest.raises(encore.UnavailableError, match="PyTorch 2.8 or newer"):
        encore.method(lambda x: x)
    with pytest.raises(encore.UnavailableError, match="PyTorch"):
        encore.check(None, "no torch")


def test_fn_and_stages_both_given_is_refused():
    with pytest.raises(encore.InvalidArgumentError, match="not both"):
        encore.method(lambda x: x, stages=[lambda x: x])


def test_a_staged_method_is_a_method():
    from encore._stages import StagedMethod
    assert issubclass(StagedMethod, encore.Method)

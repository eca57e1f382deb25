# SPDX-License-Identifier: Apache-2.0
"""An encore Manager or Method collected inside a CUDA graph capture that
PyTorch runs on this thread: its C++ owners wait for their last launch and
free device memory, which CUDA refuses during a capture (and the refusal
invalidates it). They are kept until the next encore call outside one."""

import gc
import weakref

import encore
from encore import _retire


def _captured_method(torch, name):
    mgr = encore.Manager(flags="")
    m = mgr.method(lambda x: x * 2, name=name, flags="warmup=1")
    x = torch.arange(256, dtype=torch.float32, device="cuda")
    for _ in range(4):
        y = m(x)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)
    r = m.report()
    assert r["captures"] == 1 and r["replays"] == 2, r
    return mgr, m


def _capture_while_collecting(torch, drop):
    a = torch.arange(1024, dtype=torch.float32, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        drop()
        gc.collect()  # the encore objects go here, inside PyTorch's capture
        b = a * 3
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(b, torch.arange(1024, dtype=torch.float32, device="cuda") * 3)


def test_a_method_and_manager_collected_inside_a_torch_capture(torch_cuda):
    torch = torch_cuda
    holder = list(_captured_method(torch, "collected_in_capture"))
    gone = weakref.ref(holder[1])
    _capture_while_collecting(torch, holder.clear)
    # Kept while the capture ran; let go by the next call outside one.
    assert _retire.held() >= 1
    encore.Manager(flags="")
    gc.collect()
    assert _retire.held() == 0 and gone() is None


def test_a_method_outliving_its_manager_collected_inside_a_torch_capture(torch_cuda):
    torch = torch_cuda
    mgr, m = _captured_method(torch, "outlives_manager")
    del mgr
    gc.collect()  # the Manager's Python holder goes; the method keeps the C++ manager
    holder = [m]
    del m
    _capture_while_collecting(torch, holder.clear)
    encore.Manager(flags="")
    assert _retire.held() == 0

# SPDX-License-Identifier: Apache-2.0
"""What another thread may do while a thread-local stream capture is open on
a worker thread, measured with PyTorch alone (no encore): each case begins a
capture on a worker thread, has the main thread do one thing while it is
open, and prints whether that thing failed and whether the capture survived.
Run on a GPU machine: python3 tools/probes/capture_rules_probe.py
The findings are written down in Note [What a background capture may
coincide with] (graph/capture/background_capture.cc)."""

import ctypes
import threading
import traceback

import torch

cudart = None
for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
    try:
        cudart = ctypes.CDLL(name)
        break
    except OSError:
        pass


def capture_on_worker(body, during, warm_thread=True, mode="thread_local"):
    """Runs body() under a capture on a new thread; `during` runs on this
    thread while the capture is open. Returns (during's error, capture error)."""
    begun, done = threading.Event(), threading.Event()
    out = {}

    def worker():
        try:
            s = torch.cuda.Stream()
            x = torch.ones(64, 64, device="cuda")
            if warm_thread:
                torch.cuda.current_blas_handle()
                with torch.cuda.stream(s):
                    (x @ x).sum()
                s.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.stream(s):
                g.capture_begin(capture_error_mode=mode)
                try:
                    y = body(x)
                    begun.set()
                    done.wait(5)
                    for _ in range(10):
                        y = body(y)
                finally:
                    g.capture_end()
            g.replay()
            s.synchronize()
            out["capture"] = None
        except Exception as e:  # noqa: BLE001
            out["capture"] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
            begun.set()

    t = threading.Thread(target=worker)
    t.start()
    begun.wait(10)
    err = None
    try:
        during()
    except Exception as e:  # noqa: BLE001
        err = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    done.set()
    t.join()
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        err = (err or "") + f" | later sync: {e}"
    if cudart is not None:
        cudart.cudaGetLastError()
    return err, out.get("capture")


def mm(x):
    return (x @ x) * 0.5


def add(x):
    return x + 1


cases = {
    "nothing": lambda: None,
    "legacy_stream_kernel": lambda: torch.randn(1000, device="cuda").sum(),
    "other_stream_kernel": lambda: (lambda s: (s.__enter__(), torch.randn(1000, device="cuda").sum(),
                                                s.__exit__(None, None, None)))(torch.cuda.stream(torch.cuda.Stream())),
    "new_alloc_cudaMalloc": lambda: torch.empty(512 << 20, dtype=torch.uint8, device="cuda"),
    "empty_cache_cudaFree": lambda: (torch.empty(256 << 20, dtype=torch.uint8, device="cuda"), torch.cuda.empty_cache()),
    "d2h_copy_legacy": lambda: torch.ones(10, device="cuda").cpu(),
    "stream_sync_other": lambda: torch.cuda.current_stream().synchronize(),
    "event_sync": lambda: (lambda e: (e.record(), e.synchronize()))(torch.cuda.Event()),
    "device_sync": lambda: torch.cuda.synchronize(),
    "main_global_capture": None,  # below
}


def main_capture():
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    x = torch.ones(64, 64, device="cuda")
    with torch.cuda.stream(s):
        (x @ x).sum()
    s.synchronize()
    with torch.cuda.graph(g, stream=s):  # global mode, PyTorch's default
        y = x @ x
    g.replay()
    torch.cuda.synchronize()


cases["main_global_capture"] = main_capture

print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
for name, during in cases.items():
    for body_name, body in (("add", add), ("mm", mm)):
        err, cap = capture_on_worker(body, during)
        print(f"CASE {name:24s} body={body_name:3s} main={err!s:60.60s} capture={cap}")
print("COLD thread (no warmup on the worker thread):")
for body_name, body in (("add", add), ("mm", mm)):
    err, cap = capture_on_worker(body, lambda: None, warm_thread=False)
    print(f"CASE cold_thread body={body_name} capture={cap}")

print("POOL: a graph pool id entered again after its last release")
try:
    pool = torch.cuda.graph_pool_handle()
    dev = torch.cuda.current_device()
    for i in range(2):
        torch._C._cuda_beginAllocateCurrentThreadToPool(dev, pool)
        t = torch.empty(1024, device="cuda")
        torch._C._cuda_endAllocateToPool(dev, pool)
        del t
        torch._C._cuda_releasePool(dev, pool)
        print(f"POOL graph_pool_handle round {i}: ok")
except Exception as e:  # noqa: BLE001
    print(f"POOL graph_pool_handle: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
try:
    mp = torch.cuda.MemPool()
    dev = torch.cuda.current_device()
    for i in range(3):
        torch._C._cuda_beginAllocateCurrentThreadToPool(dev, mp.id)
        t = torch.empty(1024, device="cuda")
        torch._C._cuda_endAllocateToPool(dev, mp.id)
        del t
        torch._C._cuda_releasePool(dev, mp.id)
        print(f"POOL MemPool round {i}: ok")
    del mp
    print("POOL MemPool deleted: ok")
except Exception as e:  # noqa: BLE001
    traceback.print_exc()
    print(f"POOL MemPool: {type(e).__name__}: {str(e).splitlines()[0][:160]}")

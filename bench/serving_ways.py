# SPDX-License-Identifier: Apache-2.0
"""The ways bench/python_serving_bench.py serves its requests, each built
over the same encoder function `ctx.fn` (token ids [b, seq] -> hidden
states [b, seq, hidden]). Constructing a way is its start-up (captures,
compiles, precaptures); calling it serves one request and returns a
response of b rows that later calls do not overwrite. A module, not a
benchmark (tools/gpu_suite.sh runs only bench/*_bench.py).

  eager              ctx.fn called as it is
  hand               hand-written torch.cuda.graphs as vLLM makes them: one
                     per bucket, captured at start-up largest first into one
                     shared pool (torch.cuda.graph_pool_handle()), after
                     `warmups` runs on a side stream; a request's b rows are
                     copied into the static input, the rest of its bucket
                     zeroed, the graph replayed and its b output rows cloned
  compile_static     torch.compile(mode="reduce-overhead", dynamic=False), fed
                     the requests padded to the buckets by hand as `hand` pads
                     them (fed raw, every distinct batch size would compile
                     anew); every bucket compiled and recorded at start-up
  compile_dynamic    torch.compile(mode="reduce-overhead") with the batch dim
                     marked dynamic (torch._dynamo.mark_dynamic; a batch of 1
                     is left unmarked, as dynamo specializes sizes 0 and 1):
                     compiled on the first request, a graph recorded per
                     distinct batch size by PyTorch's cudagraph trees
  encore_listed      an encore method, on_new_shape=pad with the buckets
                     listed, every bucket precaptured at start-up
  encore_learned     the same with no buckets listed: learned from the
                     traffic, at most as many as the listed ones
  encore_background  the listed buckets and capture=background: no start-up;
                     a call whose bucket has no graph yet runs eagerly while
                     the graph is made on a worker; Manager.synchronize_captures()
                     once, after the last request
  encore_compiled    encore_listed around torch.compile(ctx.fn, mode="default",
                     dynamic=False), as a serving engine puts its graphs around
                     the compiled model (vLLM): inductor's fused kernels, one
                     compile per bucket. The compiled function is run once at
                     every bucket first, largest first, as vLLM compiles and
                     warms each capture size before capturing it: precapture
                     runs its warmups at the largest bucket only, and the
                     first run of a compiled function at a new size compiles
                     (and autotunes its Triton kernels, with host syncs), which
                     must not happen inside a capture. Then precapture of
                     every bucket (start-up: both). The requests replay
                     encore's graphs, so dynamo's guards and the compiled
                     wrapper never run on a request. max_padding=2: with
                     buckets that double no call is sent eagerly for its
                     padding (an eager call of the compiled function at a
                     batch size it has not seen would compile anew,
                     dynamic=False, in the middle of the traffic)

compile_static and encore_compiled pad alike: both replay the graph of
the smallest bucket >= b (one graph per bucket, not per distinct size;
compile_dynamic is the way with a graph per size), so their padded rows
are the same. Their per-request work differs: compile_static copies the b
rows into its bucket's input and zeroes the rest outside the graph (two
kernels), runs the compiled function (dynamo's guards, AOTAutograd's
wrapper, the cudagraph trees' checks, then the replay) and clones b rows
of the graph's output; encore_compiled does the copy and the zeroing
inside its graph and copies the compiled function's result (B rows) into
its own output there, then b rows out into the response, with no Python
of the compiled function on a request.

Compiled ways reply with a clone() of the output (the next replay of
PyTorch's graphs overwrites it) after torch.compiler.cudagraph_mark_step_begin().
"""

import time

WAYS = ("eager", "hand", "compile_static", "compile_dynamic", "encore_listed", "encore_learned",
        "encore_background", "encore_compiled")
COMPILED = ("compile_static", "compile_dynamic")  # torch.compile's own graphs (reduce-overhead)
COMPILING = COMPILED + ("encore_compiled",)       # the ways that run torch.compile: own caches, dynamo's counts
ENCORE = ("encore_listed", "encore_learned", "encore_background", "encore_compiled")


def bucket_for(buckets, b):
    """The smallest of ascending `buckets` >= b, or None."""
    return next((x for x in buckets if x >= b), None)


class Way:
    """What every way has: padded-row counts, capture times, a report."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.real_rows = 0
        self.padded_rows = 0
        self.capture_ms = []  # per graph captured at start-up: the capture alone
        self.bucket_ms = []   # per bucket at start-up: its warmups and capture (or compile and recording)

    def finish(self):
        """After the last request: what must be waited for before the way's
        memory and report are read."""

    def stats(self):
        return {"real_rows": self.real_rows, "padded_rows": self.padded_rows, "capture_ms": self.capture_ms,
                "bucket_ms": self.bucket_ms, "report": None}

    def close(self):
        """Gives back what the way holds."""


class Eager(Way):
    def __call__(self, x):
        return self.ctx.fn(x)


class HandBuckets(Way):
    def __init__(self, ctx):
        super().__init__(ctx)
        torch = ctx.torch
        self.static_in = torch.zeros(ctx.buckets[-1], ctx.seq, dtype=torch.long, device=ctx.device)
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs, self.outs = {}, {}
        for rows in reversed(ctx.buckets):
            self.graphs[rows], self.outs[rows] = self.capture(rows)

    def capture(self, rows):
        """The graph of bucket `rows` and its output, after the warmups."""
        torch, x = self.ctx.torch, self.static_in[:rows]
        w0 = time.perf_counter()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(self.ctx.warmups):
                self.ctx.fn(x)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.current_stream().synchronize()  # the capture's time starts after the warmups ran
        t0 = time.perf_counter()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            out = self.ctx.fn(x)
        torch.cuda.current_stream().synchronize()
        t1 = time.perf_counter()
        self.capture_ms.append((t1 - t0) * 1e3)
        self.bucket_ms.append((t1 - w0) * 1e3)
        return graph, out

    def __call__(self, x):
        b = x.shape[0]
        rows = bucket_for(self.ctx.buckets, b)
        if rows is None:
            return self.ctx.fn(x)
        self.static_in[:b].copy_(x)
        if rows > b:
            self.static_in[b:rows].zero_()
        self.graphs[rows].replay()
        self.real_rows += b
        self.padded_rows += rows - b
        return self.outs[rows][:b].clone()

    def close(self):
        self.graphs, self.outs, self.static_in, self.pool = {}, {}, None, None


def dynamo_reset(torch):
    """Dynamo's caches and counters cleared, PyTorch's cudagraph trees (and
    their memory pools) dropped: each compiled run starts afresh."""
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    try:
        from torch._inductor import cudagraph_trees
        cudagraph_trees.reset_cudagraph_trees()
    except (ImportError, AttributeError):
        pass


def dynamo_counts():
    """What dynamo and inductor counted: graphs compiled, frames, graph
    breaks, cudagraph skips. Informative only (private counters)."""
    try:
        from torch._dynamo.utils import counters
        out = {"unique_graphs": counters["stats"].get("unique_graphs", 0),
               "frames_ok": counters["frames"].get("ok", 0),
               "graph_breaks": sum(counters["graph_break"].values())}
        out.update({k: v for k, v in counters["inductor"].items() if "cudagraph" in k})
        return out
    except Exception as e:  # noqa: BLE001 - private counters
        return {"error": f"{type(e).__name__}: {e}"}


class Compiled(Way):
    """torch.compile(mode="reduce-overhead"); `static`: dynamic=False and
    requests padded to the buckets by hand, every bucket compiled and
    recorded at start-up; else the batch dim marked dynamic."""

    def __init__(self, ctx, static):
        super().__init__(ctx)
        torch = ctx.torch
        dynamo_reset(torch)
        self.static = static
        self.mark = torch.compiler.cudagraph_mark_step_begin
        self.compiled = torch.compile(ctx.fn, mode="reduce-overhead", dynamic=False if static else None)
        if static:
            self.buf = torch.zeros(ctx.buckets[-1], ctx.seq, dtype=torch.long, device=ctx.device)
            for rows in reversed(ctx.buckets):
                t0 = time.perf_counter()
                for _ in range(ctx.warmups + 1):  # cudagraph trees: a warmup run, then the recording
                    self.mark()
                    self.compiled(self.buf[:rows])
                torch.cuda.current_stream().synchronize()
                self.bucket_ms.append((time.perf_counter() - t0) * 1e3)

    def __call__(self, x):
        b = x.shape[0]
        if not self.static:
            if b > 1:  # marked on an alias: the trace's requests, which other ways get too, stay unmarked
                x = x.detach()
                self.ctx.torch._dynamo.mark_dynamic(x, 0)
            self.mark()
            return self.compiled(x).clone()
        rows = bucket_for(self.ctx.buckets, b)
        if rows is None:
            return self.ctx.fn(x)
        buf = self.buf[:rows]
        buf[:b].copy_(x)
        if rows > b:
            buf[b:].zero_()
        self.real_rows += b
        self.padded_rows += rows - b
        self.mark()
        return self.compiled(buf)[:b].clone()

    def stats(self):
        return dict(super().stats(), dynamo=dynamo_counts())

    def close(self):
        self.compiled = None
        dynamo_reset(self.ctx.torch)


class Encore(Way):
    """An encore method under on_new_shape=pad: `mode` listed (buckets
    listed, precaptured), learned (max_graphs = as many buckets),
    background (buckets listed, capture=background) or compiled (listed,
    around torch.compile(mode="default", dynamic=False), max_padding=2)."""

    def __init__(self, ctx, mode):
        super().__init__(ctx)
        torch = ctx.torch
        self.mode = mode
        fn = ctx.fn
        flags = f"on_new_shape=pad,warmup={ctx.warmups}"
        if mode == "learned":
            flags += f",max_graphs={len(ctx.buckets)}"
        else:
            flags += ",buckets=" + "|".join(str(x) for x in ctx.buckets)
        if mode == "background":
            flags += ",capture=background"
        if mode == "compiled":
            dynamo_reset(torch)
            fn = torch.compile(ctx.fn, mode="default", dynamic=False)
            flags += ",max_padding=2"
        self.compiled = fn if mode == "compiled" else None
        self.flags = flags
        self.manager = ctx.encore.Manager(flags="")
        self.method = self.manager.method(fn, name="encode", constants=ctx.model, flags=flags)
        if mode not in ("listed", "compiled"):
            return
        example = torch.zeros(ctx.buckets[-1], ctx.seq, dtype=torch.long, device=ctx.device)
        if mode == "compiled":
            # Each bucket compiled (and its Triton kernels autotuned) by a
            # first run here, outside any capture: precapture warms up at the
            # largest bucket only, so a smaller bucket's first run would be
            # its capture. After the method is made, so that nothing of it
            # changes what dynamo guards on between these runs and the captures.
            for rows in reversed(ctx.buckets):
                t0 = time.perf_counter()
                fn(example[:rows])
                torch.cuda.current_stream().synchronize()
                self.bucket_ms.append((time.perf_counter() - t0) * 1e3)
        self.method.precapture(example)

    def __call__(self, x):
        return self.method(x)

    def finish(self):
        if self.mode == "background":
            self.manager.synchronize_captures()

    def stats(self):
        r = self.method.report()
        per = [r["capture_us"] / r["captures"] / 1e3] if r.get("captures") else []
        out = {"real_rows": r.get("real_rows", 0), "padded_rows": r.get("padded_rows", 0), "capture_ms": per,
               "bucket_ms": self.bucket_ms, "report": r, "flags": self.flags}
        if self.mode == "compiled":
            out["dynamo"] = dynamo_counts()
        return out

    def close(self):
        if getattr(self, "method", None) is not None:
            self.method.release()
        self.method = self.manager = None
        if self.mode == "compiled":
            self.compiled = None
            dynamo_reset(self.ctx.torch)


def make(way, ctx):
    """The way named `way` over `ctx` (its start-up done)."""
    if way == "eager":
        return Eager(ctx)
    if way == "hand":
        return HandBuckets(ctx)
    if way in COMPILED:
        return Compiled(ctx, static=way == "compile_static")
    if way in ENCORE:
        return Encore(ctx, way[len("encore_"):])
    raise ValueError(f"unknown way {way!r}")

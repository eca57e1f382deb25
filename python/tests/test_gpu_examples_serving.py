# SPDX-License-Identifier: Apache-2.0
"""examples/python/serving.py as a user runs it: every response equals
eager's (the example exits 1 otherwise), every bucket was precaptured and
the requests replayed them."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "serving.py"


def _field(out, name):
    m = re.search(rf"\b{name}=(\S+)", out)
    assert m, (name, out)
    return m.group(1)


def test_serving_example_precaptures_every_bucket_and_replays(torch_cuda):
    pytest.importorskip("transformers")
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, (out, done.stderr[-4000:])
    assert "buckets=[1, 2, 4, 8, 16, 32, 64, 128]" in out, out
    assert _field(out, "precaptures") == "8", out
    assert _field(out, "calls") == "300", out
    # Every request replays, unless encore ran one eagerly because its
    # padded replay would be slower (reason padding).
    replays, eager = int(_field(out, "replays")), int(_field(out, "eager_calls"))
    assert replays + eager == 300 and replays > 0, out
    reasons = re.search(r"eager_by_reason=(\{[^}]*\})", out).group(1)
    assert eager == 0 or set(re.findall(r"'(\w+)'", reasons)) == {"padding"}, out
    assert int(_field(out, "real_rows")) > 0 and int(_field(out, "padded_rows")) > 0, out
    assert "300 of 300 responses equal eager's" in out, out

"""Where the PyTorch benchmarks write their JSON: the --json path, plus a copy
in $OUT and in $RESULTS when set (tools/gpu_suite.sh bench sets RESULTS).
A module, not a benchmark: gpu_suite.sh runs only bench/*_bench.py."""

import os


def result_dirs():
    dirs = []
    for env in ("OUT", "RESULTS"):
        d = os.environ.get(env)
        if d and d not in dirs:
            dirs.append(d)
    return dirs


def write_json(text, json_path, file_name, errors):
    """Writes text to json_path and to file_name in each result dir, once per
    distinct file; appends a message to errors for each that fails."""
    written = []
    for p in [json_path] + [os.path.join(d, file_name) for d in result_dirs()]:
        if os.path.abspath(p) in written:
            continue
        try:
            with open(p, "w") as f:
                f.write(text)
            written.append(os.path.abspath(p))
            print(f"wrote {p}")
        except OSError as e:
            errors.append(f"could not write {p}: {e}")

"""Import time of ``import ctxplug`` (and of the token module a host uses every turn), in fresh interpreters.

Run: .venv/bin/python bench/bench_import.py [--runs N]

Each figure is the median over N fresh subprocesses of the time the import statement itself takes; the script
also checks that no vocabulary was loaded and lists the slowest modules ``-X importtime`` reports.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_PROBE = """
import json, sys, time
start = time.perf_counter()
import {module}
elapsed = time.perf_counter() - start
encodings = sys.modules.get("ctxplug.encodings")
print(json.dumps({{"ms": elapsed * 1e3, "tiktoken": "tiktoken" in sys.modules,
                  "vocabularies": sorted(encodings._cache) if encodings else []}}))
"""

_FIRST_COUNT = """
import json, time
import ctxplug
start = time.perf_counter()
ctxplug.count_tokens("hello world", model={model!r})
print(json.dumps({{"ms": (time.perf_counter() - start) * 1e3}}))
"""

LIMIT_MS = 150.0


def measure(module: str, runs: int) -> dict[str, object]:
    """Median import time of ``module`` over ``runs`` fresh interpreters, and what the import pulled in."""
    samples = []
    probe: dict[str, object] = {}
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-c", _PROBE.format(module=module)], capture_output=True,
                                text=True, check=True)
        probe = json.loads(result.stdout)
        samples.append(float(str(probe["ms"])))
    return {"module": module, "median_ms": statistics.median(samples), "max_ms": max(samples),
            "tiktoken_imported": probe["tiktoken"], "vocabularies_loaded": probe["vocabularies"]}


def first_count_ms(model: str, runs: int) -> float:
    """Median time of the first `count_tokens` in a fresh interpreter: the vocabulary load it triggers."""
    samples = []
    for _ in range(runs):
        result = subprocess.run([sys.executable, "-c", _FIRST_COUNT.format(model=model)], capture_output=True,
                                text=True, check=True)
        samples.append(float(json.loads(result.stdout)["ms"]))
    return statistics.median(samples)


def slowest_imports(module: str, count: int) -> list[tuple[int, str]]:
    """The ``count`` modules that ``import module`` loads with the largest cumulative time (microseconds)."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                            text=True, check=True)
    rows = []  # (cumulative us, indented name), children listed before their parent
    for line in result.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    end = max(i for i, (_, name) in enumerate(rows) if name.strip() == module.split(".")[0] or name.strip() == module)
    start = end
    while start > 0 and rows[start - 1][1].startswith("  "):  # deeper than top level: part of this import
        start -= 1
    return sorted(((micros, name.strip()) for micros, name in rows[start:end + 1]), reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="import time of ctxplug in fresh interpreters")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args(argv)
    failed = False
    print(f"python {sys.version.split()[0]}; median of {args.runs} fresh interpreters each")
    for module in ("ctxplug", "ctxplug.tokens", "ctxplug.cli"):
        row = measure(module, args.runs)
        print(f"import {module:<15} median {row['median_ms']:6.1f} ms  max {row['max_ms']:6.1f} ms  "
              f"tiktoken imported: {row['tiktoken_imported']}  vocabularies loaded: {row['vocabularies_loaded']}")
        if module == "ctxplug":
            failed = float(str(row["median_ms"])) >= LIMIT_MS or bool(row["vocabularies_loaded"])
    for model in ("gpt-4o", "gpt-4"):
        print(f"first count_tokens(model={model!r}) (builds its encoding): median "
              f"{first_count_ms(model, max(3, args.runs // 3)):.0f} ms")
    print("\nslowest modules that `import ctxplug.tokens` loads (cumulative us):")
    for micros, name in slowest_imports("ctxplug.tokens", 8):
        print(f"  {micros:>8} {name}")
    print(f"\nimport ctxplug under {LIMIT_MS:.0f} ms with no vocabulary loaded: {'no' if failed else 'yes'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

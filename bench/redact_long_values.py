"""Masking time on long hostile values: `python bench/redact_long_values.py [--size 120000]`.

Every shape here was quadratic (or worse) with the old regular expressions: a 60,000-character
alphanumeric run took 25 s. Each line prints the milliseconds redact_text, has_secret and the
shareable variant take together on one value; the times grow in proportion to --size (linear),
far below a second at 120 KB.
"""

from __future__ import annotations

import argparse
import time

from envdoctor.util.redact import has_secret, redact_private_text, redact_text


def shapes(size: int) -> dict[str, str]:
    return {
        "alphanumeric run": "a" * size,
        "scheme then a run": "https://" + "a" * size,
        "userinfo run": "https://" + "a" * size + "@host",
        "repeated schemes": "http://" * (size // 7),
        "query name run": "?" + "a" * size,
        "many parameters": "&token=x" * (size // 8),
        "dashed words": "a-" * (size // 2),
        "conda /t/ runs": "/t/" * (size // 3),
        "home folder run": "/home/" + "a" * size,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=120_000)
    size = parser.parse_args().size
    for name, value in shapes(size).items():
        started = time.perf_counter()
        redact_text(value)
        has_secret(value)
        redact_private_text(value, homes=("/home/a",))
        print(f"{name:<20} {len(value):>8} chars  {(time.perf_counter() - started) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()

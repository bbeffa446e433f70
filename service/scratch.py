"""Folders in use, marked so that another instance's start-up cleanup leaves them alone.

Several instances may share one data dir. Each keeps its scratch files (spooled uploads,
spilled id hashes, staged parts) in folders it holds an exclusive ``flock`` on, through a
``.lock`` file inside, for as long as it uses them. The kernel drops the lock when the process
dies, however it dies; so a cleanup that can take the lock (non-blocking) knows the owner is
gone, and one that cannot leaves the folder alone. A folder seen before its owner took the
lock (it is created first) is protected by a grace period on its age.

``flock`` conflicts between two open files even within one process, so two stores in one
process protect their folders from each other too. It is advisory and local: every instance
sharing the data dir must run this code on one host or a file system with working ``flock``.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

LOCK_NAME = ".lock"


class FolderLock:
    """An exclusive ``flock`` on ``directory/.lock``, created with the folder, held until :meth:`release`.

    Parameters
    ----------
    directory : Path
        A folder of this instance's own (a fresh unique name): created if missing.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh name: nobody else holds it
        except OSError:
            os.close(self._fd)
            self._fd = None
            raise

    def moved_to(self, directory: Path) -> None:
        """The folder was renamed (the lock follows the open file, not the name)."""
        self.directory = Path(directory)

    def release(self) -> None:
        """Remove the lock file, then drop the lock: from then on the folder is plain data."""
        if self._fd is None:
            return
        try:
            (self.directory / LOCK_NAME).unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None


def held(directory: Path) -> bool:
    """True while a live process holds ``directory/.lock``; False when there is none or its owner is gone."""
    try:
        fd = os.open(Path(directory) / LOCK_NAME, os.O_RDWR)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:  # unreadable: assume someone's
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the lock we may have taken
    return False


def age_s(path: Path) -> float:
    """Seconds since ``path`` last changed (0 if it vanished meanwhile)."""
    try:
        return time.time() - path.lstat().st_mtime
    except FileNotFoundError:
        return 0.0


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)

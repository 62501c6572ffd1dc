"""An exclusive lock on a small file beside the progress file, so two commands never lose each other's progress.

POSIX uses ``fcntl.flock``, Windows ``msvcrt.locking``; both are taken without
blocking and retried, so a lock held by a stopped process costs a few seconds
and a warning, never a command that hangs. The lock file itself is left in
place: deleting it while another process waits on it would let two in at once.
"""

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WAIT_SECONDS = 10.0  # a save takes milliseconds: ten seconds means the holder is stuck
RETRY_SECONDS = 0.01

if sys.platform == "win32":  # spelled so that type checkers know which module each branch has
    import msvcrt
else:
    import fcntl


class LockTimeout(OSError):
    """Another process held the lock for longer than :data:`WAIT_SECONDS`."""


def _try_lock(handle: int) -> bool:
    try:
        if sys.platform == "win32":
            msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)
        else:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):  # held by another process (Windows says PermissionError)
        return False
    return True


def _unlock(handle: int) -> None:
    if sys.platform == "win32":
        os.lseek(handle, 0, os.SEEK_SET)
        msvcrt.locking(handle, msvcrt.LK_UNLCK, 1)
    else:
        fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def locked(path: Path, wait: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block; OSError if it cannot be had."""
    # O_NONBLOCK: a FIFO planted at the lock's path must not block the open
    handle = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0), 0o666)
    try:
        deadline = time.monotonic() + wait
        while not _try_lock(handle):
            if time.monotonic() > deadline:
                raise LockTimeout(f"another handwired command has held {path.name} for over {wait:.0f} s")
            time.sleep(RETRY_SECONDS)
        try:
            yield
        finally:
            _unlock(handle)
    finally:
        os.close(handle)

"""The cross-process lock that serialises check-then-start and stop of the embedded servers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import RuntimeServerError

__all__ = ["runtime_lock"]


@contextmanager
def runtime_lock(path: Path, timeout: float) -> Iterator[None]:
    """Hold the exclusive file lock at ``path`` (an ``flock``; released by the kernel if the holder dies).

    Raises :class:`RuntimeServerError` if another process holds it for longer than ``timeout`` seconds, or if the
    lock file cannot be created.
    """
    import filelock  # here, not at the top: `status` takes no lock, and the import cost it ~10 ms (issue 17)

    lock = filelock.FileLock(str(path), timeout=timeout, preserve_lock_file=True)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise RuntimeServerError(
            f"timed out after {timeout:.0f}s waiting for the runtime lock {path}: another process is starting or "
            f"stopping the embedded servers and has not finished (check the logs next to it)"
        ) from exc
    except OSError as exc:
        raise RuntimeServerError(f"cannot create the runtime lock file {path}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        lock.release()

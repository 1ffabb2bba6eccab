"""Files only the server's own account may read: the room journal and a SQLite database hold every
live sealed race's seed, today's and tomorrow's daily codes and the games of races still being
played (docs/security.md, "The doors around the game"), so whoever reads them can deal the cards.

SQLite makes a database's ``-wal`` and ``-shm`` files with the database file's own permissions,
so the file is made (or tightened) to owner-only before SQLite opens it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

#: Read and write for the server's account, nothing for its group or anyone else.
OWNER_ONLY: Final = 0o600
#: A data directory the server makes itself: its own account alone may list and enter it.
OWNER_ONLY_DIRECTORY: Final = 0o700
#: What SQLite writes beside a database file.
SQLITE_SIDE_FILES: Final = ("-wal", "-shm", "-journal")


def private_sqlite_file(path: Path) -> None:
    """Make ``path``'s directory (owner-only if it is made here) and the database file, owner-only
    whatever the umask; a file (or side file) left readable by an earlier release is tightened."""
    path.parent.mkdir(mode=OWNER_ONLY_DIRECTORY, parents=True, exist_ok=True)
    # made here, owner-only from its first byte; an existing file is never opened for writing
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OWNER_ONLY))
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)):
        try:
            if file.stat().st_mode & 0o077:
                os.chmod(file, OWNER_ONLY)
        except FileNotFoundError:
            continue
        except PermissionError:
            # a file the operator made read-only or immutable (chattr +i) keeps its mode: the
            # server still starts, and /readyz says the database cannot be written
            continue

"""Jinja's bytecode cache, each compiled template sealed: a file is used only when its seal, a keyed
digest (HMAC-SHA256) of its bytes and of the template it stands for, is the one this cache gives
it, so a file changed, truncated, copied in from elsewhere or moved to another template's name is
ignored and the template compiled again (then written anew). Compiled code is run as it is read:
without this, a poisoned cache file would be published as a page.

The key is 32 random bytes in the cache folder (options.template_cache: the user's own, no one
else may write it), made once by whichever process needs it first. Jinja checks the rest: its own
version and Python's, and the checksum of the template's source. Jinja's own file cache (its atomic
write, its file names) does the writing; this adds only the seal, which Jinja has no hook for.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import os
import secrets
from pathlib import Path
from typing import IO

import jinja2
from jinja2.bccache import Bucket

KEY_BYTES = 32
SEAL_BYTES = hashlib.sha256().digest_size


def cache_key(folder: Path) -> bytes | None:
    """The cache's key, made on first use (written aside, then linked into place, so a process
    racing this one reads the whole key or makes none); None when it cannot be read or made."""
    path = folder / "key"
    for _ in range(2):
        try:
            with open(path, "rb", opener=lambda name, flags: os.open(name, flags | getattr(os, "O_NOFOLLOW", 0))) as stream:
                key = stream.read(KEY_BYTES + 1)
            return key if len(key) == KEY_BYTES else None
        except FileNotFoundError:
            _make_key(path)
        except OSError:
            return None
    return None


def _make_key(path: Path) -> None:
    draft = path.with_name(f".key-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as stream:
            stream.write(secrets.token_bytes(KEY_BYTES))
        with contextlib.suppress(FileExistsError):  # another process made it first: its key stands
            os.link(draft, path)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.unlink(draft)


class _Sealed:
    """A bucket as Jinja's file cache reads and writes it: its bytecode behind its seal."""

    def __init__(self, bucket: Bucket, key: bytes) -> None:
        self.bucket, self.secret, self.key = bucket, key, bucket.key  # key: the name Jinja files it under

    def seal(self, payload: bytes) -> bytes:
        return hmac.new(self.secret, self.bucket.key.encode() + b"\0" + payload, hashlib.sha256).digest()

    def write_bytecode(self, stream: IO[bytes]) -> None:
        payload = self.bucket.bytecode_to_string()
        stream.write(self.seal(payload) + payload)

    def load_bytecode(self, stream: IO[bytes]) -> None:
        seal, payload = stream.read(SEAL_BYTES), stream.read()
        if hmac.compare_digest(seal, self.seal(payload)):
            self.bucket.load_bytecode(io.BytesIO(payload))
        else:
            self.bucket.reset()


class SealedBytecodeCache(jinja2.FileSystemBytecodeCache):
    """A folder of compiled templates, each read only when its seal holds (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(str(folder), "__gpumem_%s.sealed")
        self.key = cache_key(folder)

    def load_bytecode(self, bucket: Bucket) -> None:
        if self.key is not None:
            super().load_bytecode(_Sealed(bucket, self.key))  # type: ignore[arg-type]

    def dump_bytecode(self, bucket: Bucket) -> None:
        if self.key is not None:
            super().dump_bytecode(_Sealed(bucket, self.key))  # type: ignore[arg-type]

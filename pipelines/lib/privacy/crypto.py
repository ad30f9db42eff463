"""The archive encrypted at rest: every archived delivery is a Fernet token under a key kept
outside the warehouse (`TALENT_ARCHIVE_KEY`).

Fernet (the `cryptography` library's recipe: AES-128-CBC with an HMAC-SHA256 over the whole
token) authenticates what it decrypts, so a wrong key or an altered file is an error, never
garbage rows. An encrypted file starts with `MAGIC`; a file without it was archived before a key
was set and is read as it is (`talent archive rotate-key` encrypts it). Rotation reads every file
with the old key (`TALENT_ARCHIVE_OLD_KEY`) or the new one and writes it under the new one, one
file at a time and atomically, so an interrupted rotation is finished by running it again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

MAGIC = b"talent-metrics archive v1 fernet\n"
KEY_VAR = "TALENT_ARCHIVE_KEY"
OLD_KEY_VAR = "TALENT_ARCHIVE_OLD_KEY"


class ArchiveKeyError(ValueError):
    """The archive key is missing, malformed or does not open an archived file."""


def new_key() -> str:
    """A fresh key, in the form `TALENT_ARCHIVE_KEY` takes (32 random bytes, URL-safe base64)."""
    return Fernet.generate_key().decode("ascii")


def key_problem(value: str | None, var: str = KEY_VAR) -> str | None:
    """Why `value` is not a usable key, or None."""
    if not value:
        return None
    try:
        Fernet(value.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return (
            f"{var} is not a Fernet key (32 bytes in URL-safe base64, 44 characters); make one "
            "with `talent archive new-key` and keep it outside the warehouse"
        )
    return None


@dataclass(frozen=True)
class ArchiveCipher:
    """Encrypts with `key`, decrypts with `key` or `old_key`; no key: plain files."""

    key: str | None = None
    old_key: str | None = None

    def _fernet(self, keys: list[str]) -> MultiFernet:
        for value, var in ((self.key, KEY_VAR), (self.old_key, OLD_KEY_VAR)):
            problem = key_problem(value, var)
            if problem:
                raise ArchiveKeyError(problem + ".")
        return MultiFernet([Fernet(k.encode("ascii")) for k in keys])

    @property
    def encrypts(self) -> bool:
        return bool(self.key)

    def seal(self, data: bytes) -> bytes:
        if not self.key:
            return data
        return MAGIC + self._fernet([self.key]).encrypt(data)

    def open(self, blob: bytes, where: str) -> bytes:
        """The plaintext of an archived file (`where` names it in errors)."""
        if not blob.startswith(MAGIC):
            return blob
        keys = [k for k in (self.key, self.old_key) if k]
        if not keys:
            raise ArchiveKeyError(
                f"{where} is encrypted and {KEY_VAR} is not set: set {KEY_VAR} to the key the "
                "archive was written with (kept outside the warehouse)."
            )
        try:
            return self._fernet(keys).decrypt(blob[len(MAGIC) :])
        except InvalidToken:
            hint = (
                f" nor {OLD_KEY_VAR}"
                if self.old_key
                else f"; after a key change set {OLD_KEY_VAR} to the previous key and run "
                "`talent archive rotate-key`"
            )
            raise ArchiveKeyError(
                f"{KEY_VAR} does not open {where} (a wrong key, or the file was altered){hint}."
            ) from None

    def read(self, path: Path, root: Path | None = None) -> bytes:
        where = str(path.relative_to(root)) if root else str(path)
        return self.open(path.read_bytes(), where)

    def write(self, path: Path, data: bytes) -> None:
        """Write atomically (a temporary name, then a rename): a crash leaves no half file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_bytes(self.seal(data))
        os.replace(tmp, path)


def cipher_of(settings) -> ArchiveCipher:
    return ArchiveCipher(settings.archive_key, settings.archive_old_key)


@dataclass
class Rotation:
    rewritten: int = 0  # files now under the new key that were not before
    already: int = 0  # files the new key opened already (an earlier, interrupted rotation)


def rotate(archive_dir: Path, cipher: ArchiveCipher) -> Rotation:
    """Every archived file under `cipher.key`; reads plain files and the old key's files."""
    if not cipher.key:
        raise ArchiveKeyError(
            f"{KEY_VAR} is not set: set it to the new key (`talent archive new-key` makes one) "
            f"and {OLD_KEY_VAR} to the key the archive was written with, if any."
        )
    newest = ArchiveCipher(cipher.key)
    done = Rotation()
    for path in sorted(p for p in archive_dir.rglob("*") if p.is_file()):
        if path.name.endswith(".part"):
            path.unlink()  # a write that a crash interrupted: its file was never renamed
            continue
        blob = path.read_bytes()
        if blob.startswith(MAGIC):
            try:
                newest.open(blob, str(path))
                done.already += 1
                continue
            except ArchiveKeyError:
                pass
        cipher.write(path, cipher.open(blob, str(path.relative_to(archive_dir.parent))))
        done.rewritten += 1
    return done


def archive_problem(archive_dir: Path, cipher: ArchiveCipher) -> str | None:
    """Why a run cannot use the archive with this key: an encrypted archive and no key, or a
    key that does not open it (checked on the first encrypted file). None when it can."""
    if not archive_dir.is_dir():
        return None
    for path in archive_dir.rglob("*"):
        if not path.is_file() or path.name.endswith(".part"):
            continue
        with open(path, "rb") as fh:
            if fh.read(len(MAGIC)) != MAGIC:
                continue
        try:
            cipher.read(path, archive_dir.parent)
        except ArchiveKeyError as e:
            return f"{e} Nothing was loaded."
        return None
    return None

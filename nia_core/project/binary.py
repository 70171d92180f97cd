"""Telling binary files from text: by extension, by magic number, by a NUL byte.

Cheapest first: the extension needs no read; the magic numbers and the NUL
test look at the first 8 KB only.
"""

from __future__ import annotations

import re

SNIFF_BYTES = 8192

BINARY_EXTENSIONS = frozenset(
    {
        # executables, libraries, objects
        ".exe", ".dll", ".so", ".dylib", ".a", ".lib", ".o", ".obj", ".bin", ".elf", ".wasm",
        ".class", ".jar", ".war", ".pyc", ".pyo", ".pyd", ".node",
        # images
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff", ".psd", ".heic", ".avif",
        # documents
        ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp",
        # archives and packages
        ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".whl", ".egg", ".deb", ".rpm",
        ".dmg", ".iso", ".apk", ".ipa",
        # fonts
        ".woff", ".woff2", ".ttf", ".otf", ".eot",
        # audio and video
        ".mp3", ".mp4", ".m4a", ".wav", ".ogg", ".flac", ".aac", ".avi", ".mov", ".mkv", ".webm",
        # data
        ".sqlite", ".sqlite3", ".db", ".npy", ".npz", ".pkl", ".pickle", ".parquet", ".h5", ".hdf5",
    }
)  # fmt: skip

MAGIC_NUMBERS: tuple[tuple[int, bytes], ...] = (
    (0, b"\x89PNG\r\n\x1a\n"),  # PNG
    (0, b"\xff\xd8\xff"),  # JPEG
    (0, b"GIF87a"),
    (0, b"GIF89a"),
    (0, b"%PDF-"),
    (0, b"PK\x03\x04"),  # zip, jar, docx, whl
    (0, b"PK\x05\x06"),  # empty zip
    (0, b"\x1f\x8b"),  # gzip
    (4, b"1AY&SY"),  # bzip2 (after "BZh" and the block size)
    (0, b"\xfd7zXZ\x00"),  # xz
    (0, b"7z\xbc\xaf\x27\x1c"),
    (0, b"Rar!\x1a\x07"),
    (0, b"\x28\xb5\x2f\xfd"),  # zstd
    (0, b"\x7fELF"),
    (0, b"MZ"),  # PE (Windows executables)
    (0, b"\xfe\xed\xfa\xce"),  # Mach-O
    (0, b"\xfe\xed\xfa\xcf"),
    (0, b"\xce\xfa\xed\xfe"),
    (0, b"\xcf\xfa\xed\xfe"),
    (0, b"\xca\xfe\xba\xbe"),  # Mach-O universal, Java class
    (0, b"\x00asm"),  # WebAssembly
    (0, b"SQLite format 3\x00"),
    (0, b"II*\x00"),  # TIFF
    (0, b"MM\x00*"),
    (0, b"8BPS"),  # Photoshop
    (0, b"OggS"),
    (0, b"fLaC"),
    (0, b"wOFF"),
    (0, b"wOF2"),
    (4, b"ftyp"),  # MP4, MOV, HEIC
)


_MAGIC = re.compile(
    b"|".join(rb"\A" + (b"." * offset) + re.escape(magic) for offset, magic in MAGIC_NUMBERS if magic != b"MZ"),
    re.DOTALL,
)


def binary_extension(name: str) -> bool:
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in BINARY_EXTENSIONS


def looks_binary(head: bytes) -> bool:
    """Whether a file's bytes (its first :data:`SNIFF_BYTES` are enough) show it is binary: a known magic
    number or a NUL byte. For a file-backed source: binary content is no text to put in a prompt."""
    head = head[:SNIFF_BYTES]
    if b"\x00" in head:
        return True
    if head.startswith(b"RIFF") and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return True
    if head.startswith(b"MZ"):
        return _pe_header(head)  # "MZ" alone is too short to mean anything; only a real PE header counts
    return _MAGIC.match(head) is not None


def _pe_header(head: bytes) -> bool:
    if len(head) < 64:
        return False
    offset = int.from_bytes(head[60:64], "little")
    return head[offset : offset + 4] == b"PE\x00\x00"

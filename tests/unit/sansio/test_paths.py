"""Paths (zkwire.sansio.paths): what validate_path accepts and refuses, sequential prefixes, and the bounded
memory of paths found valid."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkwire.errors import (
    InvalidPathError,
)
from zkwire.sansio import paths
from zkwire.sansio.paths import validate_path

# ----------------------------------------------------------------------------------------- paths

VALID_PATHS = [
    "/",
    "/a",
    "/a/b/c",
    "/a.b",
    "/...",
    "/a/.b",
    "/a/b..",
    "/zookeeper",
    "/日本",
    "/a b",
    "/\u00a0",
    "/\uf900",
    "/\uffef",
]
INVALID_PATHS = [
    "",
    "a",
    "a/b",
    "/a/",
    "//",
    "/a//b",
    "/.",
    "/..",
    "/a/./b",
    "/a/../b",
    "/a/.",
    "/a/..",
    "/a\x00b",
    "/\x01",
    "/\x1f",
    "/\x7f",
    "/\x9f",
    "/\ud800",
    "/\ue000",
    "/\uf8ff",
    "/\ufff0",
    "/\uffff",
    "/\U0001f600",  # sent as a surrogate pair, which the server rejects
]


@pytest.mark.parametrize("path", VALID_PATHS)
def test_valid_paths(path: str) -> None:
    assert validate_path(path) == path
    assert validate_path(path, sequential=True) == path


@pytest.mark.parametrize("path", INVALID_PATHS)
def test_invalid_paths(path: str) -> None:
    with pytest.raises(InvalidPathError):
        validate_path(path)


@pytest.mark.parametrize("path", [None, b"/a", 1])
def test_paths_must_be_str(path: object) -> None:
    with pytest.raises(InvalidPathError):
        validate_path(path)


def test_sequential_paths() -> None:
    # The server appends the counter before validating, so a trailing "/" (or "." / "..") is fine.
    for path in ("/a/", "/", "/a/b/", "/a/.", "/a/.."):
        assert validate_path(path, sequential=True) == path
    for path in ("/a//", "//", "/a/./", "a/", "/\x00/", "/a/../"):
        with pytest.raises(InvalidPathError):
            validate_path(path, sequential=True)


def test_paths_valid_only_as_a_sequential_prefix_stay_invalid_after_use() -> None:
    # validate_path remembers paths it found valid: one accepted as a sequential prefix ("/a/", which
    # the server completes) must not be remembered as valid on its own.
    for path in ("/a/", "/a/.", "/b/.."):
        assert validate_path(path, sequential=True) == path
        with pytest.raises(InvalidPathError):
            validate_path(path)
        assert validate_path(path, sequential=True) == path


def test_remembered_valid_paths_are_bounded() -> None:
    for i in range(paths._KNOWN_VALID_MAX * 2 + 10):
        validate_path(f"/bounded/{i}")
        assert len(paths._known_valid) <= paths._KNOWN_VALID_MAX


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet="/a.\x00\x1f\ud800\ufff0b", max_size=6), min_size=1, max_size=8), st.booleans())
def test_remembering_valid_paths_never_changes_a_verdict(candidates: list[str], sequential: bool) -> None:
    def verdict(path: str, seq: bool) -> str | None:
        try:
            return validate_path(path, sequential=seq)
        except InvalidPathError:
            return None

    def fresh(path: str, seq: bool) -> str | None:
        try:
            return paths._check_path(path, seq)
        except InvalidPathError:
            return None

    for path in candidates * 2:  # each path twice: the second answer may come from memory
        for seq in (sequential, not sequential):
            assert verdict(path, seq) == fresh(path, seq)

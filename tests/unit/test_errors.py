"""zkwire.errors: every error class exported and registered once, and copied with every detail kept."""

from __future__ import annotations

import pytest

from zkwire import errors
from zkwire.errors import (
    AuthFailedError,
    NoNodeError,
    ReplyTooLargeError,
    ServerError,
    UnknownServerError,
    ZKError,
    copy_error,
)

#: Every exception class zkwire.errors defines.
CLASSES = sorted(
    (obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, BaseException)),
    key=lambda cls: cls.__name__,
)


def example(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` with every detail its constructor takes."""
    if cls is UnknownServerError:
        return UnknownServerError(-4242, "/a/b", "a detail")
    if issubclass(cls, ServerError):
        return cls("/a/b", "a detail")
    if cls is ReplyTooLargeError:
        return ReplyTooLargeError(5000, 1024, "/a/b")
    if cls is errors.InvalidPathError:
        return errors.InvalidPathError("a/b", "no leading slash")
    return cls("what happened", 7)


def details(error: BaseException) -> tuple[object, ...]:
    return type(error), str(error), error.args, vars(error)


def test_every_error_class_is_exported() -> None:
    assert len(CLASSES) > 40
    assert [cls.__name__ for cls in CLASSES if cls.__name__ not in errors.__all__] == []
    assert all(issubclass(cls, ZKError) for cls in CLASSES)


def test_every_server_code_is_registered_once_by_its_class() -> None:
    coded = [cls for cls in CLASSES if issubclass(cls, ServerError) and cls not in (ServerError, UnknownServerError)]
    assert {cls.code: cls for cls in coded} == errors.ERROR_CLASSES
    assert len(errors.ERROR_CLASSES) == len(coded)
    for code, cls in errors.ERROR_CLASSES.items():
        assert type(errors.error_for_code(code)) is cls
        assert errors.error_name(code) == cls.name


def test_a_code_cannot_be_registered_twice_or_without_its_name() -> None:
    with pytest.raises(TypeError, match="-101"):

        class Again(ServerError, code=-101, name="NONODE", description="again"):
            pass

    with pytest.raises(TypeError, match="-9999"):

        class Nameless(ServerError, code=-9999):
            pass

    assert errors.ERROR_CLASSES[-101] is NoNodeError and -9999 not in errors.ERROR_CLASSES


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_a_copy_keeps_every_detail(cls: type[BaseException]) -> None:
    original = example(cls)
    original.add_note("a note")
    try:
        raise original
    except BaseException as e:
        raised = e
    copy = copy_error(raised)
    assert copy is not raised
    assert details(copy) == details(raised)
    assert copy.__notes__ == ["a note"] and copy.__notes__ is not raised.__notes__
    assert copy.__traceback__ is None


@pytest.mark.parametrize("cls", [c for c in CLASSES if issubclass(c, ServerError)], ids=lambda cls: cls.__name__)
def test_a_copy_for_another_request_names_its_path(cls: type[ServerError]) -> None:
    original = example(cls)
    assert isinstance(original, ServerError)
    original.results = ["a result"]
    copy = copy_error(original, "/other")
    assert type(copy) is cls
    assert copy.path == "/other" and "/other" in str(copy) and "/a/b" not in str(copy)
    assert copy.detail == original.detail == "a detail"
    assert copy.code == original.code
    assert copy.results == ["a result"]
    assert copy_error(original, None).path == "/a/b"


def test_an_unknown_code_and_an_auth_failure_keep_their_detail() -> None:
    unknown = copy_error(UnknownServerError(-4242, None, "strange"), "/p")
    assert (unknown.code, unknown.detail, unknown.path) == (-4242, "strange", "/p")
    assert str(unknown) == "Unknown error: /p (code -4242, strange)"
    auth = copy_error(AuthFailedError(detail="the server rejected a credential"))
    assert auth.detail == "the server rejected a credential"
    assert str(auth) == "Authentication failed (the server rejected a credential)"

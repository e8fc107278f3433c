"""zkwire.errors: every error class exported and registered once, each code mapped to its class, the classes
pickled, and copied with every detail kept."""

from __future__ import annotations

import pickle

import pytest

from zkwire import errors
from zkwire.errors import (
    AuthFailedError,
    DataTooLargeError,
    InvalidPathError,
    NoNodeError,
    ProtocolError,
    ReplyTooLargeError,
    ServerError,
    UnknownServerError,
    ZKError,
    copy_error,
    error_for_code,
    error_name,
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
    server = [cls for cls in CLASSES if issubclass(cls, ServerError) and cls not in (ServerError, UnknownServerError)]
    coded = [cls for cls in server if "code" in vars(cls)]
    # A refinement of a code's class (the TLS errors refine AuthFailedError) keeps its code, unregistered.
    for cls in server:
        if cls not in coded:
            assert errors.ERROR_CLASSES[cls.code] in cls.__mro__ and cls.__name__.startswith(
                ("TLS", "Client", "Server")
            )
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


# ---------------------------------------------------------------------------------------- errors

EXPECTED_CODES = {
    -1: "SystemZKError",
    -2: "RuntimeInconsistencyError",
    -3: "DataInconsistencyError",
    -4: "ConnectionLossError",
    -5: "MarshallingError",
    -6: "UnimplementedError",
    -7: "OperationTimeoutError",
    -8: "BadArgumentsError",
    -12: "UnknownSessionError",
    -13: "NewConfigNoQuorumError",
    -14: "ReconfigInProgressError",
    -100: "APIError",
    -101: "NoNodeError",
    -102: "NoAuthError",
    -103: "BadVersionError",
    -108: "NoChildrenForEphemeralsError",
    -110: "NodeExistsError",
    -111: "NotEmptyError",
    -112: "SessionExpiredError",
    -113: "InvalidCallbackError",
    -114: "InvalidACLError",
    -115: "AuthFailedError",
    -118: "SessionMovedError",
    -119: "NotReadOnlyError",
    -120: "EphemeralOnLocalSessionError",
    -121: "NoWatcherError",
    -122: "RequestTimeoutError",
    -123: "ReconfigDisabledError",
    -124: "SessionClosedRequireSaslAuthError",
    -125: "QuotaExceededError",
    -127: "ThrottledOpError",
}


@pytest.mark.parametrize(("code", "class_name"), sorted(EXPECTED_CODES.items()))
def test_error_code_maps_to_its_class(code: int, class_name: str) -> None:
    cls = getattr(errors, class_name)
    exc = error_for_code(code, "/x")
    assert type(exc) is cls
    assert isinstance(exc, errors.ServerError)
    assert exc.code == code
    assert exc.path == "/x"
    assert "/x" in str(exc)
    assert error_name(code) == cls.name
    assert errors.ERROR_CLASSES[code] is cls


def test_error_table_is_complete() -> None:
    assert set(errors.ERROR_CLASSES) == set(EXPECTED_CODES)
    assert error_name(0) == "OK"
    assert error_name(-101) == "NONODE"


@pytest.mark.parametrize("code", [-9, -15, -116, -117, -126, -1000, 1, 12345])
def test_unknown_code_keeps_its_number(code: int) -> None:
    exc = error_for_code(code, "/p")
    assert type(exc) is UnknownServerError
    assert exc.code == code
    assert exc.path == "/p"
    assert str(code) in str(exc)
    assert error_name(code) == f"UNKNOWN({code})"


@pytest.mark.parametrize("code", sorted(EXPECTED_CODES))
def test_error_classes_pickle(code: int) -> None:
    exc = error_for_code(code, "/a/b")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert back.code == exc.code
    assert back.path == "/a/b"
    assert str(back) == str(exc)


def test_unknown_error_and_other_errors_pickle() -> None:
    exc = UnknownServerError(-999, "/q", "extra")
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), back.code, back.path, str(back)) == (UnknownServerError, -999, "/q", str(exc))
    for other in (
        ProtocolError("bad frame"),
        DataTooLargeError("big"),
        errors.InvalidArgumentError("bad flags"),
        errors.ClientClosedError("closed"),
    ):
        again = pickle.loads(pickle.dumps(other))
        assert type(again) is type(other)
        assert str(again) == str(other)


def test_invalid_path_error_pickles() -> None:
    exc = InvalidPathError("a/b", 'must start with "/"')
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is InvalidPathError
    assert (back.path, back.reason, str(back)) == ("a/b", exc.reason, str(exc))


def test_error_hierarchy() -> None:
    assert issubclass(ProtocolError, errors.ZKError)
    assert issubclass(errors.ServerError, errors.ZKError)
    assert issubclass(InvalidPathError, ValueError)
    assert not issubclass(ProtocolError, errors.ServerError)

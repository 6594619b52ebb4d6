"""tenex's exceptions: the class hierarchy, the translation of each C++ exception, and where
tenex.einsum raises them."""
import numpy as np
import pytest

import tenex

CLASSES = ["Error", "ShapeError", "NumericalError", "BackendError", "InternalError"]


def test_hierarchy():
    assert issubclass(tenex.Error, Exception)
    assert not issubclass(tenex.Error, ValueError)
    for name in CLASSES[1:]:
        assert issubclass(getattr(tenex, name), tenex.Error), name
    assert issubclass(tenex.ShapeError, ValueError)
    assert issubclass(tenex.NumericalError, ArithmeticError)
    assert not issubclass(tenex.BackendError, ValueError)
    assert not issubclass(tenex.InternalError, ValueError)
    assert not issubclass(tenex.NumericalError, ValueError)
    for name in CLASSES:
        assert getattr(tenex, name).__module__ == "tenex"
        assert getattr(tenex, name).__doc__


@pytest.mark.parametrize("name", CLASSES)
def test_each_cpp_exception_becomes_its_class(name):
    cls = getattr(tenex, name)
    with pytest.raises(cls) as info:
        tenex._tenex._raise_for_test(name, f"the C++ message of {name}")
    # exactly that class (the most derived one), with the C++ message
    assert type(info.value) is cls
    assert str(info.value) == f"the C++ message of {name}"


def test_other_errors_are_not_tenex_errors():
    with pytest.raises(ValueError) as info:
        tenex._tenex._raise_for_test("NoSuchClass", "x")
    assert not isinstance(info.value, tenex.Error)


A = np.ones((2, 3))
B = np.ones((3, 4))


@pytest.mark.parametrize("subscripts,operands,text", [
    ("ij,jk->ik", (A,), "2 operand"),                   # too few operands
    ("ij->ij", (A, B), "1 operand"),                    # too many
    ("ijk,jk->ik", (A, B), "has 2 axes"),               # rank mismatch
    ("i,jk->ik", (A, B), "has 2 axes"),
    ("ij,jk->ik", (A, A), "extent"),                    # label extent mismatch
    ("ij,j#->i", (A, B), "invalid subscript '#'"),      # invalid character
    ("ij,jk->ik->ik", (A, B), "'->' appears more than once"),
    ("ij,jk->iq", (A, B), "'q' appears in no operand"),
    ("ij,jk->ii", (A, B), "appears twice"),
    ("ii", (A,), "diagonal"),                           # diagonal of unequal extents
    ("i.j", (A,), "'.'"),
    ("...i...", (A,), "more than once"),
    ("...ij,jk->ik", (np.ones((5, 2, 3)), B), "'...'"),  # broadcast axes dropped from the output
    ("ij-jk", (A,), "invalid subscript '-'"),
    ("ij,jk->ik", (np.ones((2, 3, 1)), B), "has 3 axes"),
])
def test_einsum_bad_subscripts(subscripts, operands, text):
    with pytest.raises(tenex.ShapeError, match=None) as info:
        tenex.einsum(subscripts, *operands)
    assert isinstance(info.value, ValueError)
    assert text in str(info.value), str(info.value)
    assert "tenex.einsum" in str(info.value)
    # numpy refuses the same subscripts with a ValueError too
    with pytest.raises(ValueError):
        np.einsum(subscripts, *operands)


def test_einsum_no_operands():
    with pytest.raises(ValueError):
        tenex.einsum("ij")


def test_einsum_unsupported_dtype_is_type_error():
    with pytest.raises(TypeError):
        tenex.einsum("i->i", np.arange(3))
    with pytest.raises(TypeError):
        tenex.einsum(3, np.ones(3))


def test_einsum_unknown_keyword():
    with pytest.raises(TypeError):
        tenex.einsum("i->i", np.ones(3), no_such_keyword=True)


def test_a_failed_call_changes_nothing():
    out = np.full((2, 4), 5.0)
    with pytest.raises(tenex.ShapeError):
        tenex.einsum("ij,jk->ik", A, A, out=out)
    assert np.all(out == 5.0)
    np.testing.assert_allclose(tenex.einsum("ij,jk->ik", A, B), A @ B)

import tenex


def test_import():
    assert tenex.__doc__ or tenex._tenex.__doc__

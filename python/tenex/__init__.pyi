# Type stubs of the tenex module (docs/python.md).

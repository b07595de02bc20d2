"""The HTTP side: the Litestar app factory, error envelope, origin check and pages."""

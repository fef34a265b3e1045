"""The ``netarena`` command line."""

"""The exceptions rocpd_rs raises (the Rust extension raises these classes too)."""


class Error(Exception):
    """An input could not be read or an output not written.

    The message is the one the ``rocpd`` command prints after ``rocpd: error:``: it names
    the file and the place (table and row, line, byte offset) and says what was expected.
    """


class UsageError(Error, ValueError):
    """A request that cannot be carried out as given: an unknown format, table, column or
    filter key, a window that misses the data, options that do not go together.

    It is a :class:`ValueError` as well as a :class:`rocpd_rs.Error`.
    """


class RocpdWarning(UserWarning):
    """Something was left out and the call went on: a file a directory walk skipped."""

"""rocpd_rs: ROCm profiling traces as streaming Arrow data, and their conversions.

The same engine as the ``rocpd`` command, in process. Inputs are RocPD databases
(rocprofv3, rocprofiler-systems), rocprofv3 CSV and JSON outputs and Triton Proton
profiles, detected by content::

    import rocpd_rs, polars as pl

    with rocpd_rs.open("run/") as inputs:
        kernels = pl.from_arrow(inputs.events("kernel_dispatch", columns=["kernel_name", "start", "end"]))

    report = rocpd_rs.convert("run/", ["pftrace", "parquet"], "out/", name="job")

Events come as a :class:`pyarrow.RecordBatchReader` that streams in time order, batch by
batch: memory stays that of a few batches whatever the trace's length, unless the
consumer collects them. Errors raise :class:`rocpd_rs.Error` with the message the CLI
prints; bad arguments raise :class:`rocpd_rs.UsageError` (a ``ValueError``) or
``TypeError``. Long calls release the GIL, and Ctrl-C stops them between chunks,
leaving no partial output. Column layouts are in the project's ``formats/`` folder.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _native
from ._errors import Error, RocpdWarning, UsageError

__all__ = [
    "CATALOG_TABLES",
    "EVENT_TABLES",
    "Error",
    "Inputs",
    "RocpdWarning",
    "UsageError",
    "convert",
    "open",
    "schema",
    "summary",
]

__version__: str = _native.version()

#: The event tables, in the model's order (``formats/model/README.md``).
EVENT_TABLES: tuple = tuple(_native.event_tables())

#: The catalog's dimension tables (those of the Parquet dataset, ``formats/parquet``).
CATALOG_TABLES: tuple = tuple(_native.catalog_tables())

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]
Time = Union[int, str, None]
Rules = Union[str, Sequence[str], None]


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if isinstance(paths, (bytes, bytearray)) or not isinstance(paths, (list, tuple)):
        try:
            paths = list(paths)  # any iterable of paths (a generator, glob.glob's list)
        except TypeError:
            raise TypeError(f"paths: expected a path or a list of paths, not {type(paths).__name__}") from None
    out = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"paths: expected str or os.PathLike, not {type(p).__name__}")
        out.append(os.fspath(p))
    return out


def _rules(value: Rules, what: str) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    rules = list(value)
    for r in rules:
        if not isinstance(r, str):
            raise TypeError(f"{what}: expected KEY=VALUE strings, not {type(r).__name__}")
    return rules


def _time(value: Time, what: str) -> Optional[str]:
    """ns as an int, or the CLI's forms as text (``"1.5s"``, ``"10%"``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{what}: expected ns as an int or a string such as '1.5s' or '10%', not {type(value).__name__}")
    return str(value)


def _selection(
    include: Rules,
    exclude: Rules,
    start: Time,
    end: Time,
    start_marker: Optional[str],
    end_marker: Optional[str],
    inclusive: bool,
    keep_launches: bool,
) -> Dict[str, Any]:
    for name, marker in (("start_marker", start_marker), ("end_marker", end_marker)):
        if marker is not None and not isinstance(marker, str):
            raise TypeError(f"{name}: expected a marker's message (str), not {type(marker).__name__}")
    return {
        "include": _rules(include, "include"),
        "exclude": _rules(exclude, "exclude"),
        "start": _time(start, "start"),
        "end": _time(end, "end"),
        "start_marker": start_marker,
        "end_marker": end_marker,
        "inclusive": bool(inclusive),
        "keep_launches": bool(keep_launches),
    }


def _reader(stream: Any) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_stream(stream)


class Inputs:
    """Opened inputs: files, globs or directories, detected by content.

    RocPD databases are read in place; rocprofv3 CSV runs and JSON files and Proton
    files are read directly. Only a rocprofv3 run the direct reader cannot take is
    imported into a private temporary directory that lives as long as this object (or
    until :meth:`close`); the import notes name it. Nothing is ever written beside an
    input. A process given twice is refused. One call at a time per object: a second
    thread's call while one runs raises ``RuntimeError``. ``threads`` describes (or
    imports) that many rocprofv3 or Proton inputs at once (default: the machine's
    cores); what is read does not depend on it.
    """

    def __init__(
        self, paths: Paths, skip_bad_rows: bool = False, threads: Optional[int] = None
    ) -> None:
        self._inputs: Optional[_native.Inputs] = _native.Inputs(
            _paths(paths), bool(skip_bad_rows), threads
        )
        for w in self._inputs.warnings():
            warnings.warn(w, RocpdWarning, stacklevel=3)

    @property
    def _handle(self) -> "_native.Inputs":
        if self._inputs is None:
            raise UsageError("these inputs are closed")
        return self._inputs

    def close(self) -> None:
        """Releases the inputs and removes their temporary imports (streams already
        handed out keep what they need until they end)."""
        self._inputs = None

    def __enter__(self) -> "Inputs":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def info(self) -> Dict[str, Any]:
        """What ``rocpd info --json`` prints: files, processes, agents, time span and rows
        per table."""
        return json.loads(self._handle.info_json())

    def catalog(self, name: str) -> pa.Table:
        """A dimension table (one of :data:`CATALOG_TABLES`: ``processes``, ``threads``,
        ``agents``, ``kernel_symbols``, ...) with the columns of the Parquet dataset's
        ``<name>/`` table (its ``part-*.parquet`` files)."""
        return _reader(self._handle.catalog(name)).read_all()

    def events(
        self,
        table: str,
        columns: Optional[Sequence[str]] = None,
        start: Time = None,
        end: Time = None,
        include: Rules = None,
        exclude: Rules = None,
        *,
        start_marker: Optional[str] = None,
        end_marker: Optional[str] = None,
        inclusive: bool = True,
        keep_launches: bool = False,
        threads: Optional[int] = None,
    ) -> pa.RecordBatchReader:
        """The rows of one event table, in time order, as a streaming reader.

        ``table`` is one of :data:`EVENT_TABLES` (or a word the CLI's ``kind=`` filter
        takes: ``kernel``, ``api``, ``copy``, ...). Rows come by start time across batches
        (within a batch by start, then end descending). ``columns`` keeps only those
        columns, in that order; the reader does not build the others unless the rules or
        the window read them. ``start``/``end`` (ns as an int,
        or ``"1.5s"``, ``"10%"``), the markers, ``inclusive``, ``keep_launches`` and the
        ``include``/``exclude`` rules (``"name=^gemm"``, ``"pid=123"``, ...) mean what the
        CLI's options of the same names mean. The reader implements the Arrow C stream
        interface, so polars (``pl.from_arrow``) and DuckDB read it without a copy.
        """
        if columns is not None:
            if isinstance(columns, str):
                raise TypeError("columns: expected a list of column names, not a str")
            columns = list(columns)
        if not isinstance(table, str):
            raise TypeError(f"table: expected a table name (str), not {type(table).__name__}")
        selection = _selection(include, exclude, start, end, start_marker, end_marker, inclusive, keep_launches)
        return _reader(self._handle.events(table, columns, threads, selection))

    def convert(
        self,
        formats: Union[str, Sequence[str]],
        output_dir: PathLike = "./rocpd-output-data",
        name: str = "out",
        *,
        include: Rules = None,
        exclude: Rules = None,
        start: Time = None,
        end: Time = None,
        start_marker: Optional[str] = None,
        end_marker: Optional[str] = None,
        inclusive: bool = True,
        keep_launches: bool = False,
        group_by_queue: bool = False,
        kernel_rename: bool = False,
        agent_index_value: str = "relative",
        annotations: bool = True,
        annotate_args: bool = False,
        stats: bool = False,
        split_by: Optional[str] = None,
        split_count: Optional[int] = None,
        split_duration: Union[int, str, None] = None,
        max_file_size: Union[int, str, None] = None,
        row_group_rows: Optional[int] = None,
        max_rows_per_file: Optional[int] = None,
        partition_by: Union[str, Sequence[str], None] = None,
        append: bool = False,
        table_format: Optional[str] = None,
        max_open: Optional[int] = None,
        threads: Optional[int] = None,
        report: Optional[PathLike] = None,
    ) -> Dict[str, Any]:
        """Converts the inputs, as ``rocpd convert`` does, and returns the run report
        (what ``--report`` writes: rows read and written per table and output).

        ``formats``: ``pftrace`` (or ``perfetto``), ``otf2``, ``parquet``, ``csv``,
        ``rocpd``. Every keyword is the CLI option of the same name (``split_by`` is
        ``--split-by``); ``annotations=False`` is ``--no-annotations``. An int
        ``split_duration`` is ns, an int ``max_file_size`` bytes. Outputs are whole or
        absent: a failed or interrupted call leaves none. ``append=True`` adds the run
        to an existing Parquet dataset (``--append``), safely while other processes do
        the same; ``table_format="delta"`` also writes a Delta Lake log per table.
        """
        if isinstance(formats, str):
            formats = [formats]
        if isinstance(partition_by, (list, tuple)):
            partition_by = ",".join(partition_by)
        if isinstance(split_duration, int) and not isinstance(split_duration, bool):
            split_duration = f"{split_duration}ns"
        if isinstance(max_file_size, int) and not isinstance(max_file_size, bool):
            max_file_size = str(max_file_size)
        selection = _selection(include, exclude, start, end, start_marker, end_marker, inclusive, keep_launches)
        options = {
            "group_by_queue": bool(group_by_queue),
            "kernel_rename": bool(kernel_rename),
            "agent_index_value": agent_index_value,
            "annotations": bool(annotations),
            "annotate_args": bool(annotate_args),
            "stats": bool(stats),
            "split_by": split_by,
            "split_count": split_count,
            "split_duration": split_duration,
            "max_file_size": max_file_size,
            "row_group_rows": row_group_rows,
            "max_rows_per_file": max_rows_per_file,
            "partition_by": partition_by,
            "append": bool(append),
            "table_format": table_format,
            "max_open": max_open,
            "threads": threads,
            "report": None if report is None else os.fspath(report),
        }
        text = self._handle.convert(list(formats), os.fspath(output_dir), name, selection, options)
        return json.loads(text)

    def summary(
        self,
        by_rank: bool = False,
        domain_summary: bool = False,
        region_categories: Optional[Sequence[str]] = None,
        *,
        include: Rules = None,
        exclude: Rules = None,
        start: Time = None,
        end: Time = None,
        start_marker: Optional[str] = None,
        end_marker: Optional[str] = None,
        inclusive: bool = True,
        keep_launches: bool = False,
        threads: Optional[int] = None,
    ) -> Dict[str, pa.Table]:
        """The flat profile of ``rocpd summary``: one table per view, keyed by AMD's view
        name (``KERNELS_SUMMARY``, ``HIP_SUMMARY``, ``MEMORY_COPIES_SUMMARY``, ...; with
        ``by_rank`` also ``KERNELS_SUMMARY_BY_RANK``, ...; with ``domain_summary``
        ``DOMAIN_SUMMARY``), with AMD's columns: ``Name``, ``Calls``,
        ``DURATION (nsec)``, ``AVERAGE (nsec)``, ``PERCENT (INC)``, ``MIN (nsec)``,
        ``MAX (nsec)``, ``STD_DEV`` (``ProcessID`` and ``Hostname`` first per rank).
        Rows are sorted by total duration, longest first.
        """
        if isinstance(region_categories, str):
            region_categories = [region_categories]
        selection = _selection(include, exclude, start, end, start_marker, end_marker, inclusive, keep_launches)
        views = self._handle.summary(
            bool(by_rank), bool(domain_summary), list(region_categories or []), threads, selection
        )
        return {title: _reader(stream).read_all() for title, stream in views}


def open(paths: Paths, skip_bad_rows: bool = False) -> Inputs:  # noqa: A001 (the package's verb)
    """Opens files, globs or directories (see :class:`Inputs`). ``skip_bad_rows`` skips
    rocprofv3 CSV/JSON rows that cannot be read (counted in reports) instead of failing."""
    return Inputs(paths, skip_bad_rows)


def convert(
    paths: Paths,
    formats: Union[str, Sequence[str]],
    output_dir: PathLike = "./rocpd-output-data",
    name: str = "out",
    *,
    skip_bad_rows: bool = False,
    **options: Any,
) -> Dict[str, Any]:
    """Opens ``paths`` and converts them: :meth:`Inputs.convert` with the same keywords.
    Returns the run report."""
    with Inputs(paths, skip_bad_rows, options.get("threads")) as inputs:
        return inputs.convert(formats, output_dir, name, **options)


def summary(
    paths: Paths,
    by_rank: bool = False,
    domain_summary: bool = False,
    region_categories: Optional[Sequence[str]] = None,
    *,
    skip_bad_rows: bool = False,
    **options: Any,
) -> Dict[str, pa.Table]:
    """Opens ``paths`` and computes their flat profile: :meth:`Inputs.summary`."""
    with Inputs(paths, skip_bad_rows, options.get("threads")) as inputs:
        return inputs.summary(by_rank, domain_summary, region_categories, **options)


def schema(table: str) -> pa.Schema:
    """The Arrow schema of an event table (``formats/model/README.md``)."""
    return _reader(_native.table_schema(table)).schema

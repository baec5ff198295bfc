"""Type stubs of the Rust extension module rocpd_rs._native (crates/python/src/lib.rs).

Programs use the package's own functions (rocpd_rs.open, convert, summary, schema);
this module is what they call.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

class ArrowStream:
    """One Arrow C stream, consumable once."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...

class Inputs:
    def __init__(
        self, paths: Sequence[str], skip_bad_rows: bool = False, threads: Optional[int] = None
    ) -> None: ...
    def warnings(self) -> List[str]: ...
    def info_json(self) -> str: ...
    def catalog(self, name: str) -> ArrowStream: ...
    def events(
        self,
        table: str,
        columns: Optional[List[str]],
        threads: Optional[int],
        selection: Dict[str, Any],
    ) -> ArrowStream: ...
    def convert(
        self,
        formats: List[str],
        output_dir: str,
        name: str,
        selection: Dict[str, Any],
        options: Dict[str, Any],
    ) -> str: ...
    def summary(
        self,
        by_rank: bool,
        domain_summary: bool,
        region_categories: List[str],
        threads: Optional[int],
        selection: Dict[str, Any],
    ) -> List[Tuple[str, ArrowStream]]: ...

def table_schema(table: str) -> ArrowStream: ...
def event_tables() -> List[str]: ...
def catalog_tables() -> List[str]: ...
def version() -> str: ...

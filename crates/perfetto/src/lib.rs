//! Perfetto writer (in progress).

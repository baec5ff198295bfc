//! A global allocator that counts heap allocations, for the allocation tests: on the
//! calling thread between [`count_this_thread`] calls (tests run side by side, each on its
//! own thread, and count their own), or on every thread between [`count_everywhere`]
//! calls (for a test binary holding one test). A test binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting;`.

// A global allocator is an `unsafe impl`; the workspace denies unsafe code, and the
// allocation tests are the one place that needs it. Every call is passed on to `System`.
#![allow(unsafe_code)]
// Each test binary uses one of the two ways of counting.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// See the module documentation.
pub struct Counting;

thread_local! {
    static THIS_THREAD: Cell<bool> = const { Cell::new(false) };
    static THIS_THREAD_COUNT: Cell<u64> = const { Cell::new(0) };
}

static EVERYWHERE: AtomicBool = AtomicBool::new(false);
static EVERYWHERE_COUNT: AtomicU64 = AtomicU64::new(0);

fn count_here() {
    if EVERYWHERE.load(Ordering::Relaxed) {
        EVERYWHERE_COUNT.fetch_add(1, Ordering::Relaxed);
    }
    // `try_with`: a thread being torn down has no thread-locals left to ask.
    if THIS_THREAD.try_with(Cell::get).unwrap_or(false) {
        let _ = THIS_THREAD_COUNT.try_with(|n| n.set(n.get() + 1));
    }
}

/// Starts or stops counting the calling thread's allocations.
pub fn count_this_thread(on: bool) {
    THIS_THREAD.with(|c| c.set(on));
}

/// The calling thread's allocations counted so far.
pub fn this_thread_count() -> u64 {
    THIS_THREAD_COUNT.with(Cell::get)
}

/// Starts or stops counting every thread's allocations.
pub fn count_everywhere(on: bool) {
    EVERYWHERE.store(on, Ordering::Relaxed);
}

/// Every thread's allocations counted so far.
pub fn everywhere_count() -> u64 {
    EVERYWHERE_COUNT.load(Ordering::Relaxed)
}

// SAFETY: every call is passed on to the system allocator unchanged; the counting
// touches only atomics and const-initialised thread-locals, which do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_here();
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_here();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_here();
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

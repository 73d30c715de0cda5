//! A counting allocator: the runner reads how much one execution allocated, and refuses any single
//! request past a hard cap before the machine runs out of memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// A request this large is a bug in a parser, whatever the input: it is refused and reported.
pub const HARD_CAP: usize = 1 << 30;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static INPUT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static INPUT_LEN: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counted.
pub struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(layout.size(), || unsafe { System.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(layout.size(), || unsafe { System.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = counted(new_size, || unsafe { System.realloc(ptr, layout, new_size) });
        if !new.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        new
    }
}

/// One request of `size` bytes: refused past the cap, counted when it succeeds.
fn counted(size: usize, allocate: impl FnOnce() -> *mut u8) -> *mut u8 {
    if size > HARD_CAP {
        refuse(size);
        return std::ptr::null_mut();
    }
    let ptr = allocate();
    if !ptr.is_null() {
        grow(size);
    }
    ptr
}

fn grow(size: usize) {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

/// Says which input asked, without allocating (the process aborts right after).
fn refuse(size: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = size;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut err = std::io::stderr();
    let _ = err.write_all(b"\nfuzz: unbounded allocation: one request of ");
    let _ = err.write_all(&digits[at..]);
    let _ = err.write_all(b" bytes; the input, in hex (`xxd -r -p` makes it a file for --replay):\n");
    let (ptr, len) = (INPUT.load(Ordering::Relaxed), INPUT_LEN.load(Ordering::Relaxed));
    if !ptr.is_null() {
        // SAFETY: `running` keeps the input alive while the target runs, which is when this is called.
        let input = unsafe { std::slice::from_raw_parts(ptr, len) };
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for chunk in input.chunks(512) {
            let mut line = [0u8; 1024];
            for (i, byte) in chunk.iter().enumerate() {
                line[2 * i] = HEX[usize::from(byte >> 4)];
                line[2 * i + 1] = HEX[usize::from(byte & 15)];
            }
            let _ = err.write_all(&line[..2 * chunk.len()]);
        }
        let _ = err.write_all(b"\n");
    }
}

/// Runs `f` with `input` noted as the one being executed, for [`refuse`] to show.
pub fn running<R>(input: &[u8], f: impl FnOnce() -> R) -> R {
    INPUT.store(input.as_ptr().cast_mut(), Ordering::Relaxed);
    INPUT_LEN.store(input.len(), Ordering::Relaxed);
    let result = f();
    INPUT.store(std::ptr::null_mut(), Ordering::Relaxed);
    result
}

/// Bytes allocated and not yet freed.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts measuring the peak from the current level.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// The highest level since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

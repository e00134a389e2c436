//! SIGINT and SIGTERM as a flag the long-running loops poll, so they end
//! cleanly between cycles instead of mid-write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM. Idempotent.
pub fn install_stop_handler() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, handler);
        }
    }
}

/// Whether SIGINT or SIGTERM arrived since the handler was installed.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Sleeps for `duration`, waking early when a stop is requested. Returns
/// `false` if it was interrupted.
pub fn sleep_unless_stopped(duration: Duration) -> bool {
    let deadline = Instant::now() + duration;
    while !stop_requested() {
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(100)));
    }
    false
}

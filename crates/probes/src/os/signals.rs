//! SIGINT and SIGTERM as a flag the long-running loops poll, so they end
//! cleanly between cycles instead of mid-write; SIGHUP, where a loop asks
//! for it, as a second flag: reload the config between cycles.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static STOP: AtomicBool = AtomicBool::new(false);
static INSTALLED: Once = Once::new();
static RELOAD: AtomicBool = AtomicBool::new(false);
static RELOAD_INSTALLED: Once = Once::new();

/// Installs the handler for SIGINT and SIGTERM: it only sets the flag, so
/// the process no longer dies of them. Idempotent.
pub fn install_stop_handler() {
    INSTALLED.call_once(|| {
        for signal in [SIGINT, SIGTERM] {
            // Fails only for the signals no handler may take (SIGKILL,
            // SIGSTOP) or an invalid number, neither of which these are.
            let _ = signal_hook::flag::register(signal, &STOP);
        }
    });
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

/// Installs the handler for SIGHUP: it only sets the reload flag, so the
/// process no longer dies of it (a closed terminal no longer ends it either).
/// Only a loop that reloads something asks for it. Idempotent.
pub fn install_reload_handler() {
    RELOAD_INSTALLED.call_once(|| {
        // Fails only for signals no handler may take, which SIGHUP is not.
        let _ = signal_hook::flag::register(SIGHUP, &RELOAD);
    });
}

/// Whether SIGHUP arrived since the last call (the request is taken: a
/// second SIGHUP during the reload asks for another).
pub fn take_reload_request() -> bool {
    RELOAD.swap(false, Ordering::SeqCst)
}

/// Whether a SIGHUP is pending, without taking it.
pub fn reload_pending() -> bool {
    RELOAD.load(Ordering::SeqCst)
}

/// Why [`sleep_unless_stopped_or_reloaded`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// The whole duration passed.
    Elapsed,
    /// SIGINT or SIGTERM: the loop ends.
    Stop,
    /// SIGHUP: the loop reloads (the request is taken).
    Reload,
}

/// Sleeps for `duration`, waking early (within 100 ms) when a stop or a
/// reload is requested; a stop wins over a reload.
pub fn sleep_unless_stopped_or_reloaded(duration: Duration) -> Wake {
    let deadline = Instant::now() + duration;
    loop {
        if stop_requested() {
            return Wake::Stop;
        }
        if take_reload_request() {
            return Wake::Reload;
        }
        let now = Instant::now();
        if now >= deadline {
            return Wake::Elapsed;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(100)));
    }
}

//! SIGINT and SIGTERM as a flag the long-running loops poll, so they end
//! cleanly between cycles instead of mid-write.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};

static STOP: AtomicBool = AtomicBool::new(false);
static INSTALLED: Once = Once::new();

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

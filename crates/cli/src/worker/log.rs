//! The worker's lines on stderr.

/// One line on stderr, in the worker's own prefix.
pub(super) fn say(message: std::fmt::Arguments<'_>) {
    crate::output::say(format_args!("bmb-monitor worker: {message}"));
}

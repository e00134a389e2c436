//! The demo's narration on stdout.

/// Prints a line; a closed stdout must not stop the demo before it cleans up.
macro_rules! say {
    ($($arg:tt)*) => {{
        crate::output::print(format_args!($($arg)*));
    }};
}
pub(super) use say;

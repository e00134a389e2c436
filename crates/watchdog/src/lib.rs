//! The monitors as state machines over ports.
//!
//! **Architecture Invariant:** nothing here calls the OS; every observation
//! arrives through a port trait, so every branch is driven from tests with
//! fakes and a fake clock.
pub mod lead;
pub mod session;
pub mod target;
pub mod witness;
pub mod worker;

/// The longest duration any monitor takes, in seconds (a year): a timeout,
/// stall window or interval beyond it is a mistake, refused where it
/// enters, and anything up to it adds to a clock without overflowing.
pub const MAX_DURATION_SECS: u64 = 365 * 24 * 3600;

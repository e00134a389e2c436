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

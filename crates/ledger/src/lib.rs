//! What `bmb-monitor` remembers between polls and across restarts.
pub mod escalation;
pub mod findings;
pub mod journal;
pub mod session;

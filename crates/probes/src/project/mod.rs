//! The watched project's repository: the git questions the monitors ask, and
//! the rules files its agents are told to obey.

pub mod git;
pub mod rules;

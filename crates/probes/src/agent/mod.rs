//! What the agent CLIs write about themselves: Claude Code's session file
//! and its transcripts.

pub mod claude;
pub mod transcript;

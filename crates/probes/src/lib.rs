//! Every question `bmb-monitor` asks of the machine.
//!
//! **Architecture Invariant:** this is the only product crate that starts a
//! subprocess or reads `/proc`; the monitors in `watchdog` reach the machine
//! only through port traits that the CLI implements with the functions here.
pub mod claude;
pub mod clock;
pub mod cpu;
pub mod file;
pub mod git;
pub mod inbox;
pub mod input;
pub mod lock;
pub mod meta;
pub mod pid_files;
pub mod pidfd;
pub mod process;
pub mod procfs;
pub mod run;
pub mod signals;
pub mod ssh;
pub mod tmux;
pub mod transcript;

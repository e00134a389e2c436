//! `bmb-monitor`: see the library (`src/lib.rs`) for the commands.

fn main() -> std::process::ExitCode {
    bmb_monitor::main()
}

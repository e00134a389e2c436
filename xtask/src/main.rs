//! Project chores: `cargo xtask golden`, `cargo xtask capture`, `cargo xtask bench`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("usage: cargo xtask <golden|capture|bench> [args]");
        return ExitCode::from(2);
    };
    match task.as_str() {
        other => {
            eprintln!("xtask: unknown task `{other}` (expected golden, capture or bench)");
            ExitCode::from(2)
        }
    }
}

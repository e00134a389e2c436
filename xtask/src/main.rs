//! Project chores: `cargo xtask golden`, `cargo xtask capture`, `cargo xtask drift`. The benchmarks
//! are `cargo bench` targets of the crates they measure (PERFORMANCE.md names each).

mod capture;
mod drift;
mod golden;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  golden     replay testdata/panes through the classifier; UPDATE_EXPECT=1 re-blesses --explain snapshots
  capture    regenerate real captures (see testdata/README.md)
  drift      replay the capture scenarios with the pinned and the newest release of each CLI, print the matrices

benchmarks are not tasks: `cargo bench -p <crate> --bench <name>` (PERFORMANCE.md names each)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match task.as_str() {
        "golden" => run_golden(),
        "capture" => capture::run(&args[1..]),
        "drift" => drift::run(&args[1..]),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("xtask: unknown task `{other}`\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run_golden() -> ExitCode {
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    let report = golden::replay(&golden::testdata_root(), update);
    print!("{}", golden::render(&report));
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

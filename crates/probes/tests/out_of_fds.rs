//! A program that cannot be started because this process has no descriptor
//! left is said as that, with what would fix it, not as the program's
//! trouble (at 1,000 targets the monitor said `ssh: Too many open files`).
//! Alone in its test binary: it lowers the whole process's limit.

use bmb_probes as probes;
use probes::run::{Invocation, Limits, Outcome, run};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

#[test]
fn a_spawn_out_of_descriptors_names_the_monitor_and_the_limit() {
    let before = getrlimit(Resource::Nofile);
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(open),
            maximum: before.maximum,
        },
    )
    .unwrap();
    let outcome = run(
        &Invocation::shell("true"),
        &Limits::with_timeout(std::time::Duration::from_secs(10)),
    );
    setrlimit(Resource::Nofile, before).unwrap();
    let Outcome::FailedToSpawn { error } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        error.contains("this monitor is out of file descriptors") && error.contains("LimitNOFILE="),
        "{error}"
    );
    assert!(
        outcome.describe().starts_with("failed to start: sh: "),
        "{}",
        outcome.describe()
    );
}

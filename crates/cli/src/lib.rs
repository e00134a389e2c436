//! `bmb-monitor`: the binary's library. Glue only: parse arguments, wire the
//! real adapters to the monitors' ports, map errors to exit codes. Every rule
//! lives in `classify`, `ledger`, `probes`, `watchdog` or `audit`, where a test
//! drives it.
//!
//! One folder per command, one job per file; `output` is the one way any of
//! them prints.

// Every line goes through `output`, which cannot panic on a closed stream.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod alert;
mod audit;
mod classify_cmd;
mod clock;
mod demo;
mod exit;
mod lead;
mod list;
mod notify;
mod output;
mod profiles;
mod redact;
mod server_args;
mod status;
mod watch;
mod worker;

// What the integration tests and benches drive directly: the lead pass's real port and clock.
pub use clock::SystemClock;
pub use lead::port::RealPort;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `$XDG_STATE_HOME/bmb-monitor`, else `~/.local/state/bmb-monitor`: where
/// every command keeps what it remembers.
pub(crate) fn state_dir() -> std::path::PathBuf {
    use std::path::PathBuf;
    match xdg_state_home() {
        Some(dir) => dir.join("bmb-monitor"),
        None => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
            PathBuf::from(home).join(".local/state/bmb-monitor")
        }
    }
}

/// `$XDG_STATE_HOME` when it is an absolute path. The XDG base directory
/// spec says a relative one is invalid and ignored: taken as given, it
/// named another folder from every working directory (a monitor detached
/// into tmux, a `status` run elsewhere), so each kept its own memory.
pub(crate) fn xdg_state_home() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(std::path::PathBuf::from)
        .filter(|dir| dir.is_absolute())
}

/// The longest duration any flag takes, in seconds (a year).
pub(crate) const MAX_SECS: u64 = watchdog::MAX_DURATION_SECS;

// `--audit-every` takes the same year as every other duration flag; the audit
// crate keeps its own bound so that it depends on no monitor.
const _: () = assert!(::audit::cadence::MAX_EVERY_SECS == MAX_SECS);

/// A duration flag in whole seconds, from `min` up to [`MAX_SECS`].
pub(crate) fn secs(min: u64) -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(min..=MAX_SECS)
}

#[derive(Parser)]
#[command(name = "bmb-monitor", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Audit a project against its own stated rules: one read-only auditor per dimension, every citation checked.
    Audit(audit::Args),
    /// Classify one pane capture read from stdin: WORKING, QUESTION, STALLED or BLOCKED.
    Classify(classify_cmd::Args),
    /// Watch a Lead's agents by metadata only; report state changes, never a heartbeat.
    Lead(lead::Args),
    /// Watch agent sessions in tmux panes (local or `host:session`): nudge, escalate, or stay silent.
    Watch(Box<watch::Args>),
    /// List the tmux sessions that can be watched, here and on every ssh alias, and their monitors.
    List(list::ListArgs),
    /// End the detached monitor of a target started with `watch --detach`.
    Stop(list::StopArgs),
    /// The board: every target of every running `watch`, its state, for how long, and why.
    Status(status::Args),
    /// Play a scripted agent on a private tmux server, watched by the real monitor: all four states.
    Demo(demo::Args),
    /// Watch a dispatched agent's process: publish `gone`, `idle` and `clear` findings.
    Worker(worker::Args),
}

/// Parses the command line and runs the command it names.
pub fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Audit(args) => audit::run(args),
        Command::Classify(args) => classify_cmd::run(args),
        Command::Lead(args) => lead::run(args),
        Command::Worker(args) => worker::run(args),
        Command::Watch(args) => watch::run(*args),
        Command::List(args) => list::run_list(args),
        Command::Stop(args) => list::run_stop(args),
        Command::Status(args) => status::run(args),
        Command::Demo(args) => demo::run(args),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use clap::CommandFactory;

    use super::Cli;

    /// The flags of one command as the README's `## Commands` block spells
    /// them, and whether a line ends in a bare ` ...` (some flags left out).
    fn readme_synopsis() -> Vec<(String, BTreeSet<String>, bool)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).expect("the README reads");
        let block = readme
            .split("## Commands\n\n```\n")
            .nth(1)
            .and_then(|rest| rest.split("\n```").next())
            .expect("README has a `## Commands` code block");
        let mut out: Vec<(String, BTreeSet<String>, bool)> = Vec::new();
        for line in block.lines() {
            let line = line.split("    # ").next().unwrap_or(line);
            if let Some(rest) = line.strip_prefix("bmb-monitor ") {
                let name = rest.split_whitespace().next().unwrap_or_default();
                match out.iter().position(|(n, _, _)| n == name) {
                    // a command's second form (`watch --config FILE …`) adds to its first
                    Some(at) => {
                        let entry = out.remove(at);
                        out.push(entry);
                    }
                    None => out.push((name.to_string(), BTreeSet::new(), false)),
                }
            }
            let (_, flags, abridged) = out.last_mut().expect("the block starts with a command");
            // `[--endpoint ADDR]...` repeats a flag; a bare ` ...` leaves flags out.
            *abridged |= line.trim_end().ends_with(" ...");
            for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
                let is_long = word.starts_with("--") && word.len() > 2;
                let is_short = word.len() == 2 && word.starts_with('-') && word != "--";
                if is_long || is_short {
                    flags.insert(word.to_string());
                }
            }
        }
        out
    }

    #[test]
    fn the_readme_synopsis_names_every_flag_of_every_command_and_no_other() {
        let synopsis = readme_synopsis();
        let cli = Cli::command();
        let mut wrong = Vec::new();
        for command in cli.get_subcommands() {
            let name = command.get_name();
            let (_, written, abridged) = synopsis
                .iter()
                .find(|(n, _, _)| n == name)
                .unwrap_or_else(|| {
                    panic!("README's `## Commands` has no `bmb-monitor {name}` line")
                });
            let mut real = BTreeSet::new();
            // What `--help` shows: a hidden flag is the binary talking to itself.
            for arg in command.get_arguments().filter(|arg| !arg.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    real.insert(format!("--{long}"));
                }
                if let Some(short) = arg.get_short() {
                    real.insert(format!("-{short}"));
                }
            }
            let unknown: Vec<_> = written.difference(&real).collect();
            if !unknown.is_empty() {
                wrong.push(format!(
                    "README's `bmb-monitor {name}` names flags it does not have: {unknown:?}"
                ));
            }
            let missing: Vec<_> = real.difference(written).collect();
            // The synopsis is whole: a line ending in `...` hid flags `--help` shows.
            if !missing.is_empty() {
                wrong.push(format!(
                    "README's `bmb-monitor {name}` leaves out {missing:?}: name every flag `--help` shows"
                ));
            } else if *abridged {
                wrong.push(format!(
                    "README's `bmb-monitor {name}` ends in ` ...`: name the flags it stands for"
                ));
            }
        }
        for (name, _, _) in &synopsis {
            if cli.find_subcommand(name).is_none() {
                wrong.push(format!(
                    "README's `## Commands` names `bmb-monitor {name}`, which is no command"
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// The words of the README's `BMB_REASON` table, in its order: the rows
    /// after its `| `BMB_REASON` | what it means |` header, up to the first
    /// line that is not a row.
    fn reason_table(readme: &str) -> Option<Vec<String>> {
        let mut lines = readme
            .lines()
            .skip_while(|l| !l.starts_with("| `BMB_REASON` |"));
        lines.next()?;
        let words = lines
            .skip_while(|l| l.starts_with("|---"))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|row| {
                let cell = row.trim_start_matches('|').split('|').next()?.trim();
                Some(cell.trim_matches('`').to_string())
            })
            .collect();
        Some(words)
    }

    /// What is wrong with the README's `BMB_REASON` table against
    /// `Reason::ALL`: a word it lacks, one it has that no reason gives, one
    /// it lists twice.
    fn reason_table_problems(readme: &str) -> Vec<String> {
        let Some(table) = reason_table(readme) else {
            return vec!["no `| `BMB_REASON` | what it means |` table".to_string()];
        };
        let words: Vec<&str> = watchdog::session::Reason::ALL
            .iter()
            .map(|r| r.word())
            .collect();
        let mut problems = Vec::new();
        for word in &words {
            if !table.iter().any(|row| row == word) {
                problems.push(format!("`{word}` is missing"));
            }
        }
        for (at, row) in table.iter().enumerate() {
            if !words.contains(&row.as_str()) {
                problems.push(format!("`{row}` is no reason"));
            } else if table[..at].contains(row) {
                problems.push(format!("`{row}` is listed twice"));
            }
        }
        problems
    }

    #[test]
    fn the_readme_bmb_reason_table_lists_exactly_the_reasons() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).expect("the README reads");
        let problems = reason_table_problems(&readme);
        assert!(
            problems.is_empty(),
            "README's BMB_REASON table: {problems:?}"
        );
    }

    /// The check above fails on a table that lacks a reason, names one that
    /// is not, or lists one twice, and on a README without the table.
    #[test]
    fn the_bmb_reason_table_check_finds_a_missing_an_extra_and_a_twice_listed_word() {
        let rows: Vec<String> = watchdog::session::Reason::ALL
            .iter()
            .map(|r| format!("| `{}` | why |", r.word()))
            .collect();
        let table = |rows: &[String]| {
            format!(
                "intro\n\n| `BMB_REASON` | what it means |\n|---|---|\n{}\n\nafter\n| `x` | not in the table |\n",
                rows.join("\n")
            )
        };
        assert!(reason_table_problems(&table(&rows)).is_empty());

        let mut wrong = rows.clone();
        let gone = wrong.remove(wrong.len() - 1);
        wrong.push("| `bogus` | no such reason |".to_string());
        wrong.push(rows[0].clone());
        let gone_word = gone.split('`').nth(1).unwrap();
        let first_word = rows[0].split('`').nth(1).unwrap();
        assert_eq!(
            reason_table_problems(&table(&wrong)),
            [
                format!("`{gone_word}` is missing"),
                "`bogus` is no reason".to_string(),
                format!("`{first_word}` is listed twice"),
            ]
        );
        assert_eq!(
            reason_table_problems("no table here\n| `question` | a row of nothing |\n"),
            ["no `| `BMB_REASON` | what it means |` table"]
        );
    }
}

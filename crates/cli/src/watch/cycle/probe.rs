//! The work and progress probes: run per cycle, a bad answer said once per change.
//!
//! Where each runs is the target's `probes_on` (`--probes-on`): on this
//! machine, every run its own process, at most [`AT_ONCE`] at a time; or,
//! for a remote target with `probes_on = "host"`, on its host inside the
//! cycle's one request to it (`hosts.rs`, `probes::remote::host`), where no
//! process is started here. A command that does not mention `BMB_TARGET`
//! cannot differ per target, so it runs once per cycle where it runs: once
//! on this machine for every target that has it here, once per host for
//! that host's targets.

use std::collections::BTreeMap;
use std::time::Duration;

use classify::parse_count;
use probes::remote::host::RemoteProbe;
use probes::run::{self, Invocation, Limits, Outcome};

use super::super::ProbesOn;
use super::super::probe_kind::Kind;
use super::super::target_settings::TargetSettings;
use super::Watch;
use crate::alert::sanitize_text;

/// Local probe runs at once, at most: a cycle's local probes end within
/// `ceil(runs / AT_ONCE)` probe timeouts.
pub(in crate::watch) const AT_ONCE: usize = 8;

/// Where one target's probe of one kind gets its answer this cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    None,
    /// The local run of this index.
    Local(usize),
    /// The probe of this index in the host's request.
    Host(String, usize),
}

/// One run: its kind, command, and the target it runs for (`None`: a
/// shared command, run once for every target that has it).
#[derive(Debug, Clone)]
struct Run {
    kind: Kind,
    command: String,
    target: Option<String>,
}

/// One cycle's probes: what runs here, what rides in each host's request,
/// and where each target's answers come from.
#[derive(Debug, Default)]
pub(in crate::watch) struct Plan {
    sources: Vec<[Source; 2]>,
    local: Vec<Run>,
    /// Per host, the probes of its request, in the order asked.
    pub(in crate::watch) remote: BTreeMap<String, Vec<RemoteProbe>>,
    remote_runs: BTreeMap<String, Vec<Run>>,
}

/// Whether a target's probes run on its host (a remote target whose
/// `probes_on` says so); a local target's run here either way.
fn on_host(settings: &TargetSettings) -> Option<&str> {
    match settings.probes_on {
        ProbesOn::Host => settings.target.host.as_deref(),
        ProbesOn::Monitor => None,
    }
}

/// The runs of a cycle over `targets`, local and per host: a per-target
/// command once per target, a shared one once per place it runs.
pub(in crate::watch) fn plan(targets: &[&TargetSettings]) -> Plan {
    let mut plan = Plan::default();
    let mut shared: BTreeMap<(Option<String>, Kind, String), Source> = BTreeMap::new();
    for settings in targets {
        let target = settings.target.to_string();
        let mut sources = [Source::None, Source::None];
        for (slot, kind) in sources.iter_mut().zip(Kind::BOTH) {
            let Some(command) = kind.command(settings) else {
                continue;
            };
            let per_target = watchdog::session::probe_runs_per_target(command);
            let host = on_host(settings).map(str::to_string);
            let key = (host.clone(), kind, command.to_string());
            if !per_target && let Some(source) = shared.get(&key) {
                *slot = source.clone();
                continue;
            }
            let run = Run {
                kind,
                command: command.to_string(),
                target: per_target.then(|| target.clone()),
            };
            let source = match host {
                None => {
                    plan.local.push(run);
                    Source::Local(plan.local.len() - 1)
                }
                Some(host) => {
                    let asked = plan.remote.entry(host.clone()).or_default();
                    asked.push(RemoteProbe {
                        target: target.clone(),
                        command: command.to_string(),
                    });
                    plan.remote_runs.entry(host.clone()).or_default().push(run);
                    Source::Host(host, asked.len() - 1)
                }
            };
            if !per_target {
                shared.insert(key, source.clone());
            }
            *slot = source;
        }
        plan.sources.push(sources);
    }
    plan
}

/// How many probe runs a cycle over `targets` makes on this machine, and
/// the most rounds of probes one host's request holds (a probe deadline
/// each, [`probes::remote::host::PROBES_AT_ONCE`] at once): the watchdog's sum.
pub(in crate::watch) fn runs(targets: &[TargetSettings]) -> (usize, u32) {
    let plan = plan(&targets.iter().collect::<Vec<_>>());
    let rounds = plan
        .remote
        .values()
        .map(|probes| probes::remote::host::probe_rounds(probes.len()))
        .max()
        .unwrap_or(0);
    (plan.local.len(), rounds)
}

impl Watch<'_> {
    /// This cycle's probe plan, from each target's settings.
    pub(in crate::watch) fn probe_plan(&self) -> Plan {
        let settings: Vec<&TargetSettings> = self.watched.iter().map(|w| &w.settings).collect();
        plan(&settings)
    }

    /// Runs the plan's local probes side by side ([`AT_ONCE`] at a time):
    /// each one's answer (a count's text) or `None`, in the plan's order.
    pub(in crate::watch) fn run_local_probes(&mut self, plan: &Plan) -> Vec<Option<String>> {
        let invocations: Vec<Invocation> = plan
            .local
            .iter()
            .map(|run| {
                let invocation = Invocation::shell(&run.command);
                match &run.target {
                    Some(target) => invocation.env("BMB_TARGET", target),
                    None => invocation,
                }
            })
            .collect();
        let limits = Limits::with_timeout(Duration::from_secs(self.args.probe_timeout));
        let ran = run::run_side_by_side(&invocations, &limits, AT_ONCE);
        plan.local
            .iter()
            .zip(ran)
            .map(|(probe, (outcome, took))| {
                self.fleet
                    .operations
                    .probe_ran(probe.kind, "monitor", Some(took));
                self.judge(probe, None, &outcome)
            })
            .collect()
    }

    /// Each target's work and progress answers this cycle: from the local
    /// runs (`local`, as [`Watch::run_local_probes`] gave them) and from the
    /// hosts' answers to this cycle's requests. A host that gave no answer
    /// (unreachable, late) gives its probes none, said by its captures.
    #[cfg(test)]
    pub(in crate::watch) fn probe_answers(
        &mut self,
        plan: &Plan,
        local: &[Option<String>],
    ) -> (Vec<Option<String>>, Vec<Option<String>>) {
        let all: Vec<usize> = (0..plan.sources.len()).collect();
        self.probe_answers_for(plan, local, &all)
    }

    /// [`Watch::probe_answers`] for the targets `indices` (one group, polled
    /// as its host answers), in their order: the outcomes of their hosts'
    /// runs are taken (and judged) here.
    pub(in crate::watch) fn probe_answers_for(
        &mut self,
        plan: &Plan,
        local: &[Option<String>],
        indices: &[usize],
    ) -> (Vec<Option<String>>, Vec<Option<String>>) {
        let hosts: std::collections::BTreeSet<&String> = indices
            .iter()
            .filter_map(|&index| plan.sources.get(index))
            .flatten()
            .filter_map(|source| match source {
                Source::Host(host, _) => Some(host),
                _ => None,
            })
            .collect();
        let mut remote: BTreeMap<(String, usize), Option<String>> = BTreeMap::new();
        for host in hosts {
            let Some(runs) = plan.remote_runs.get(host) else {
                continue;
            };
            let Some(outcomes) = self.hosts.probes.remove(host) else {
                continue;
            };
            for (index, (probe, outcome)) in runs.iter().zip(outcomes).enumerate() {
                let answer = match outcome {
                    Outcome::FailedToSpawn { .. } => None,
                    outcome => {
                        self.fleet.operations.probe_ran(probe.kind, "host", None);
                        self.judge(probe, Some(host), &outcome)
                    }
                };
                remote.insert((host.clone(), index), answer);
            }
        }
        let answer = |source: &Source| match source {
            Source::None => None,
            Source::Local(index) => local.get(*index).cloned().flatten(),
            Source::Host(host, index) => remote.get(&(host.clone(), *index)).cloned().flatten(),
        };
        indices
            .iter()
            .map(|&index| match plan.sources.get(index) {
                Some([work, progress]) => (answer(work), answer(progress)),
                None => (None, None),
            })
            .unzip()
    }

    /// A run's outcome as an answer: its count's text, or `None` (unknown),
    /// its trouble said once per change.
    fn judge(&mut self, probe: &Run, host: Option<&str>, outcome: &Outcome) -> Option<String> {
        let what = probe.kind.as_str();
        // A shared probe is known by its command (and where it ran): two
        // targets' different shared commands each have their own trouble to say.
        let key = match (&probe.target, host) {
            (Some(target), _) => format!("{what}:{target}"),
            (None, Some(host)) => format!("{what}:{host}*{}", probe.command),
            (None, None) => format!("{what}:*{}", probe.command),
        };
        let answer = outcome.success_stdout().map(|out| out.text());
        let on = host.map_or(String::new(), |host| format!(" on {host}"));
        let problem = match &answer {
            // A probe prints a count; anything else (`seven`, `-1`, two numbers) is unknown.
            Some(text) if parse_count(text).is_some() => None,
            Some(text) => Some(format!(
                "{what} probe{on} printed {:?}, not a count",
                printable_excerpt(text)
            )),
            None => Some(format!("{what} probe{on} {}", outcome.describe())),
        };
        match problem {
            None => {
                self.probe_errors.clear(&key);
                answer
            }
            Some(message) => {
                // Unknown, said once per change: the classifier fails open on it.
                let who = match (&probe.target, host) {
                    (Some(target), _) => target.clone(),
                    (None, Some(host)) => format!("every target on {host}"),
                    (None, None) => "every target".to_string(),
                };
                self.probe_errors.say(
                    key,
                    &format!("bmb-monitor: watch: {who}: {message}; reading it as unknown"),
                );
                None
            }
        }
    }
}

/// The start of a probe's output, for a message: one line, at most 40 characters.
pub(in crate::watch) fn printable_excerpt(text: &str) -> String {
    sanitize_text(text.trim())
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(40)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog::session::target::Target;

    fn settings(target: &str, work: Option<&str>, on: ProbesOn) -> TargetSettings {
        TargetSettings {
            target: Target::parse(target).unwrap(),
            server: None,
            work_probe: work.map(str::to_string),
            progress_probe: None,
            nudge_budget: 5,
            nudge_text: "go on".into(),
            profile: None,
            probes_on: on,
        }
    }

    #[test]
    fn a_plan_runs_per_target_commands_per_target_and_shared_ones_once_where_they_run() {
        let each = "grep -c x ~/$BMB_TARGET";
        let targets = [
            settings("a", Some(each), ProbesOn::Host),
            settings("b", Some("echo 1"), ProbesOn::Monitor),
            settings("box:c", Some(each), ProbesOn::Host),
            settings("box:d", Some("echo 1"), ProbesOn::Host),
            settings("box:e", Some("echo 1"), ProbesOn::Host),
            settings("box:f", Some("echo 1"), ProbesOn::Monitor),
            settings("gpu:g", None, ProbesOn::Host),
        ];
        let plan = plan(&targets.iter().collect::<Vec<_>>());
        // A local target's probes run here whatever it says; box:f's too.
        let local: Vec<(&str, Option<&str>)> = plan
            .local
            .iter()
            .map(|r| (r.command.as_str(), r.target.as_deref()))
            .collect();
        assert_eq!(local, [(each, Some("a")), ("echo 1", None)]);
        let on_box: Vec<(&str, &str)> = plan.remote["box"]
            .iter()
            .map(|p| (p.target.as_str(), p.command.as_str()))
            .collect();
        assert_eq!(on_box, [("box:c", each), ("box:d", "echo 1")]);
        assert!(!plan.remote.contains_key("gpu"), "no probe, nothing asked");
        let works: Vec<&Source> = plan.sources.iter().map(|[w, _]| w).collect();
        assert_eq!(
            works,
            [
                &Source::Local(0),
                &Source::Local(1),
                &Source::Host("box".into(), 0),
                &Source::Host("box".into(), 1),
                &Source::Host("box".into(), 1),
                &Source::Local(1),
                &Source::None,
            ]
        );
        assert_eq!(runs(&targets), (2, 1));
    }
}

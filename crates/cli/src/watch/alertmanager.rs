//! `--alertmanager URL`: every target's firing escalations posted to
//! Alertmanager's v2 API (`POST URL/api/v2/alerts`), re-sent while they fire
//! and resolved when the verdict moves on. What fires and when it ends is
//! decided in `watchdog::session::alerts`; this is the HTTP glue. A failing
//! Alertmanager is said once per change and costs a poll at most
//! [`POST_TIMEOUT`]; what it did not take is sent again next poll.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use watchdog::session::alerts::{
    AlertBook, HostBook, Kept, KeptHost, Posting, TargetLabels, Timing,
};
use watchdog::session::target::Target;
use watchdog::session::{Action, PollReport, TargetMonitor};

use crate::alert::sanitize_text;
use crate::output::SaidOnce;

/// The longest one post may take, connection included: a slow or hung
/// Alertmanager delays a poll by this much at most.
pub(super) const POST_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a post in flight looks at the stop flag: a SIGTERM while
/// Alertmanager holds the request ends the monitor this soon, the post
/// left unanswered (what it carried is kept for the next run).
const STOP_CHECK: Duration = Duration::from_millis(50);

/// Why a post delivered nothing.
#[derive(Debug, PartialEq, Eq)]
enum Unsent {
    /// No 2xx, or no answer: said, and sent again next poll.
    Failed(String),
    /// The monitor is stopping: the post was left in flight.
    Stopped,
}

/// Tests only: how often a firing alert is re-sent, in seconds, instead of
/// every poll but at most once a minute (a test cannot wait minutes for a
/// re-sending). Each sending still holds [`watchdog::session::alerts::HOLD`].
const REFRESH_ENV: &str = "BMB_MONITOR_ALERT_REFRESH_SECS";

/// The folder in the state folder that keeps what fires across a restart:
/// one file per target (`<target's file key>.json`), so monitors of the
/// same server (`--detach` runs one per target) never write each other's.
const KEPT_DIR: &str = "alerts";

/// An annotation's cap: a question's dialog is a screenful, well under it.
const ANNOTATION_CAP: usize = 8 * 1024;

/// The `--alertmanager` value: an `http://` base URL (a path prefix is
/// kept, for an Alertmanager behind `--web.route-prefix`).
pub(super) fn parse_url(text: &str) -> Result<String, String> {
    let text = text.trim_end_matches('/');
    // Said without its userinfo: a password never reaches a terminal or a journal.
    let shown = crate::redact::urls(text);
    if text.starts_with("https://") {
        return Err(
            "https is not supported (this build has no TLS): give Alertmanager's plain http address, \
             or a local TLS-terminating proxy in front of a remote one"
                .to_string(),
        );
    }
    let Some(rest) = text.strip_prefix("http://") else {
        return Err(format!(
            "`{shown}` is not an http:// URL (for example http://127.0.0.1:9093)"
        ));
    };
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{shown}` names no host (for example http://127.0.0.1:9093)"
        ));
    }
    Ok(text.to_string())
}

/// The sink: one alert book per target, and the client that delivers them.
pub(super) struct Alertmanager {
    endpoint: String,
    /// The endpoint as messages show it: its userinfo's password redacted
    /// (basic auth rides in the URL, and ureq sends it as a header).
    shown: String,
    agent: ureq::Agent,
    timing: Timing,
    /// The `host` label of a local target: this machine's name.
    local_host: String,
    /// The `server` label: the tmux server ([`crate::server_args::ServerArgs::identity`]).
    server: String,
    /// The targets on a tmux server of their own, with its `server` label.
    pub(super) own_servers: Vec<(Target, String)>,
    books: BTreeMap<Target, AlertBook>,
    /// The targets settled since the last post; any other book's target is no longer watched.
    settled: BTreeSet<Target>,
    said: SaidOnce<()>,
    /// Requests that failed (no 2xx, or no answer), for the metrics.
    pub(super) failed_posts: u64,
    /// One alert per unreachable host.
    hosts: HostBook,
    /// `<state folder>/alerts/`: what fires, for the next watcher.
    kept: Option<std::path::PathBuf>,
    kept_said: SaidOnce<()>,
}

/// What a target's kept file holds: its firing alerts and, while it fires,
/// its host's `BmbHostUnreachable`, as posted (labels, message, start).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct KeptFile {
    #[serde(default)]
    alerts: Vec<Kept>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<KeptHost>,
}

/// The timing of `interval`, or the tests' refresh.
fn timing(interval: Duration) -> Timing {
    match std::env::var(REFRESH_ENV)
        .ok()
        .and_then(|secs| secs.trim().parse::<u64>().ok())
        .filter(|secs| *secs > 0)
    {
        Some(secs) => Timing::refreshed_every(Duration::from_secs(secs)),
        None => Timing::for_interval(interval),
    }
}

impl Alertmanager {
    /// `state`: the state folder that keeps what fires across a restart
    /// (`None`: nothing kept).
    pub(super) fn new(
        url: &str,
        interval: Duration,
        server: String,
        state: Option<&std::path::Path>,
    ) -> Alertmanager {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(POST_TIMEOUT))
            // A 4xx or 5xx is read, so its body can say what Alertmanager refused.
            .http_status_as_error(false)
            // No redirect is followed: a client that follows a 301/302/303
            // re-sends the POST as a GET without its body, the GET answers 200
            // (an auth proxy's login page), and every alert would count as
            // delivered. A 3xx is a failed delivery, said and sent again.
            .max_redirects(0)
            .build();
        let endpoint = format!("{url}/api/v2/alerts");
        let timing = timing(interval);
        Alertmanager {
            shown: crate::redact::urls(&endpoint),
            endpoint,
            agent: ureq::Agent::new_with_config(config),
            timing,
            local_host: local_host_name(),
            server,
            own_servers: Vec::new(),
            books: BTreeMap::new(),
            settled: BTreeSet::new(),
            said: SaidOnce::default(),
            failed_posts: 0,
            hosts: HostBook::new(timing),
            kept: state.map(|dir| dir.join(KEPT_DIR)),
            kept_said: SaidOnce::default(),
        }
    }

    /// Writes each target's firing alerts to its kept file when they (or its
    /// host's) changed, a temporary file renamed over it, and removes the
    /// file once nothing fires; a failure is said once per change.
    fn keep(&mut self) {
        let hosts = self.hosts.take_changed();
        let Some(dir) = self.kept.clone() else {
            for book in self.books.values_mut() {
                book.take_changed();
            }
            return;
        };
        let mut failure = None;
        for (target, book) in &mut self.books {
            let host = book.labels().host.clone();
            if !book.take_changed() && !hosts.contains(&host) {
                continue;
            }
            let file = KeptFile {
                alerts: book.kept(),
                host: self.hosts.kept(&host),
            };
            let path = dir.join(format!("{}.json", target.file_key()));
            let result = if file.alerts.is_empty() && file.host.is_none() {
                match std::fs::remove_file(&path) {
                    Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
                    _ => Ok(()),
                }
            } else {
                write_whole(
                    &dir,
                    &path,
                    &serde_json::to_string(&file).unwrap_or_default(),
                )
            };
            if let Err(err) = result {
                failure = Some((path, err));
            }
        }
        match failure {
            None => self.kept_said.clear(&()),
            Some((path, err)) => self.kept_said.say(
                (),
                &format!(
                    "bmb-monitor: watch: cannot keep the firing alerts in {}: {}; a restarted watcher tells them afresh",
                    path.display(),
                    err.kind()
                ),
            ),
        }
    }

    /// This cycle's hosts, each with why it is unreachable (`None`: it
    /// answered), as the board judged them (its `local` is this machine's name).
    pub(super) fn hosts(&mut self, hosts: Vec<(String, Option<String>)>) {
        let local = &self.local_host;
        let hosts: Vec<(String, Option<String>)> = hosts
            .into_iter()
            .map(|(host, error)| {
                let host = match host == watchdog::session::board::LOCAL_HOST {
                    true => local.clone(),
                    false => host,
                };
                (host, error)
            })
            .collect();
        self.hosts.observe(
            hosts
                .iter()
                .map(|(host, error)| (host.as_str(), error.as_deref())),
            Timestamp::now(),
        );
    }

    /// This sink is replaced (a reload named another Alertmanager, or none):
    /// what fires there is resolved, in one try. The kept file stays, so
    /// the next sink posts what still fires under the same starts.
    pub(super) fn retire(&mut self) {
        let now = Timestamp::now();
        for book in self.books.values_mut() {
            book.resolve_all(now);
        }
        self.hosts.observe(std::iter::empty(), now);
        // Not settled: the kept file is not rewritten.
        self.deliver(now, None);
    }

    /// A reloaded interval: each firing alert is re-sent with the hold that
    /// interval needs.
    pub(super) fn set_interval(&mut self, interval: Duration) {
        self.timing = timing(interval);
        for book in self.books.values_mut() {
            book.set_timing(self.timing);
        }
        self.hosts.set_timing(self.timing);
    }

    /// The target's book; a new one starts from what its last watcher kept.
    fn book(&mut self, target: &Target) -> &mut AlertBook {
        let Alertmanager {
            books,
            hosts,
            kept,
            local_host,
            timing,
            server,
            own_servers,
            ..
        } = self;
        books.entry(target.clone()).or_insert_with(|| {
            let server = own_servers
                .iter()
                .find(|(t, _)| t == target)
                .map_or_else(|| server.clone(), |(_, own)| own.clone());
            let labels = TargetLabels {
                target: target.to_string(),
                host: target.host.clone().unwrap_or_else(|| local_host.clone()),
                session: target.session.clone(),
                server,
            };
            let mut book = AlertBook::new(labels, *timing);
            if let Some(dir) = kept {
                restore(dir, target, &mut book, hosts);
            }
            book
        })
    }

    /// A target's poll: the alerts its monitor raised (before its actions run)
    /// and what it holds after them.
    pub(super) fn raised(&mut self, target: &Target, actions: &[Action], monitor: &TargetMonitor) {
        let now = Timestamp::now();
        let book = self.book(target);
        for action in actions {
            if let Action::Alert(alert) = action {
                book.raise(alert, monitor.profile(), now);
            }
        }
    }

    pub(super) fn settle(&mut self, target: &Target, report: &PollReport, monitor: &TargetMonitor) {
        let now = Timestamp::now();
        self.settled.insert(target.clone());
        self.book(target)
            .settle(report, monitor.memory(), monitor.profile(), now);
    }

    /// A target still watched that this cycle did not poll (its host is on
    /// an earlier request): its alerts stand as they are, neither resolved
    /// nor dropped as a target no longer watched would be.
    pub(super) fn still_watched(&mut self, target: &Target) {
        self.settled.insert(target.clone());
    }

    /// After every target's poll: one request with every alert due; the
    /// books learn what Alertmanager took.
    pub(super) fn post(&mut self) {
        let now = Timestamp::now();
        let settled = std::mem::take(&mut self.settled);
        for (target, book) in &mut self.books {
            if !settled.contains(target) {
                book.resolve_all(now);
            }
        }
        self.deliver(now, Some(&settled));
    }

    /// What is due now, outside a cycle, ending nothing: the firing alerts a
    /// reload re-timed, with their new hold.
    pub(super) fn post_due(&mut self) {
        self.deliver(Timestamp::now(), None);
    }

    /// One request with every alert due; with `settled` (after a cycle), the
    /// books of targets no longer watched are dropped once they are idle.
    fn deliver(&mut self, now: Timestamp, settled: Option<&BTreeSet<Target>>) {
        if settled.is_some() {
            self.keep();
        }
        let due: Vec<(Target, Vec<Posting>)> = self
            .books
            .iter()
            .map(|(target, book)| (target.clone(), book.due(now)))
            .filter(|(_, postings)| !postings.is_empty())
            .collect();
        let host_due = self.hosts.due(now);
        if due.is_empty() && host_due.is_empty() {
            return;
        }
        let body = body(
            host_due
                .iter()
                .chain(due.iter().flat_map(|(_, postings)| postings)),
        );
        match self.send(&body) {
            Ok(()) => {
                if self.said.is_failing(&()) {
                    self.said.clear(&());
                    crate::output::say(format_args!(
                        "bmb-monitor: watch: alertmanager {}: delivering again",
                        self.shown
                    ));
                }
                self.hosts.delivered(&host_due, now);
                for (target, postings) in &due {
                    if let Some(book) = self.books.get_mut(target) {
                        book.delivered(postings, now);
                    }
                }
                if let Some(settled) = settled {
                    self.books
                        .retain(|target, book| settled.contains(target) || !book.is_idle());
                }
            }
            Err(Unsent::Stopped) => crate::output::say(format_args!(
                "bmb-monitor: watch: alertmanager {}: a post was cut short by the stop; {}",
                self.shown,
                match &self.kept {
                    Some(_) => "what fires is kept, and the next run posts it",
                    None => "the next run posts what still fires",
                }
            )),
            Err(Unsent::Failed(why)) => {
                self.failed_posts += 1;
                self.said.say(
                (),
                &format!(
                    "bmb-monitor: watch: alertmanager {}: {}; the alerts will be sent again next poll",
                    self.shown,
                    crate::redact::with_secret_of(&self.endpoint, &why)
                ),
                )
            }
        }
    }

    /// One post on a thread of its own, waited for while the monitor is not
    /// stopping: ureq's own timeout ([`POST_TIMEOUT`]) ends a slow one, a
    /// stop request ends the wait at once.
    fn send(&self, body: &str) -> Result<(), Unsent> {
        let (agent, endpoint, body) = (self.agent.clone(), self.endpoint.clone(), body.to_string());
        let (answer, answered) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("alertmanager post".to_string())
            .spawn(move || {
                let _ = answer.send(post(&agent, &endpoint, &body));
            });
        if let Err(err) = thread {
            return Err(Unsent::Failed(format!("no thread to post from: {err}")));
        }
        loop {
            match answered.recv_timeout(STOP_CHECK) {
                Ok(result) => return result.map_err(Unsent::Failed),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if probes::os::signals::stop_requested() {
                        return Err(Unsent::Stopped);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Unsent::Failed("the post's thread failed".to_string()));
                }
            }
        }
    }
}

/// `POST endpoint` with `body`: taken on a 2xx, else what was answered.
fn post(agent: &ureq::Agent, endpoint: &str, body: &str) -> Result<(), String> {
    let mut response = agent
        .post(endpoint)
        .header("Content-Type", "application/json")
        .send(body)
        .map_err(|err| match err {
            ureq::Error::Timeout(_) => format!(
                "no answer within {} s (a hung or overloaded Alertmanager)",
                POST_TIMEOUT.as_secs()
            ),
            ureq::Error::Io(err) => format!("cannot reach it: {err}"),
            err => err.to_string(),
        })?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let said = response
        .body_mut()
        .with_config()
        .limit(512)
        .read_to_string()
        .unwrap_or_default();
    let said = sanitize_text(&said).replace('\n', " ");
    let mut why = format!("answered {status}");
    if status.is_redirection() {
        why.push_str(" (a redirect, not followed: the URL must be Alertmanager's own)");
    }
    if !said.trim().is_empty() {
        why.push_str(": ");
        why.push_str(said.trim());
    }
    Err(why)
}

/// What the last watcher of `target` left firing (its kept file in `dir`):
/// each alert fires again as it was (the same labels and start), so
/// Alertmanager sees no new alert; the first cycle resolves what moved on
/// meanwhile.
fn restore(dir: &std::path::Path, target: &Target, book: &mut AlertBook, hosts: &mut HostBook) {
    let path = dir.join(format!("{}.json", target.file_key()));
    let text = match probes::fs::file::read_regular_text(&path, 1 << 20) {
        Ok(text) => text,
        Err(err) => {
            if path.exists() {
                crate::output::say(format_args!(
                    "bmb-monitor: watch: cannot read the alerts kept in {}: {err}; what fired before the restart fires again from its journal",
                    path.display()
                ));
            }
            return;
        }
    };
    match serde_json::from_str::<KeptFile>(&text) {
        Ok(kept) => {
            book.restore(&kept.alerts);
            if let Some(host) = &kept.host {
                hosts.restore(&book.labels().host, host);
            }
        }
        Err(err) => crate::output::say(format_args!(
            "bmb-monitor: watch: the alerts kept in {} do not read ({err}); what fired before the restart fires again from its journal",
            path.display()
        )),
    }
}

/// `text` as the whole of `path` (in `dir`, made if missing): a temporary
/// file renamed over it, so a reader never sees half of one.
fn write_whole(dir: &std::path::Path, path: &std::path::Path, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut temp, text.as_bytes())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// One alert of Alertmanager's v2 `POST /api/v2/alerts` body, as its API names the fields.
/// Fields and labels are in alphabetical order, the order the body has had since before it was
/// a type of its own.
#[derive(serde::Serialize)]
struct AlertJson {
    /// What a receiver shows: the first line, and the whole message.
    annotations: AnnotationsJson,
    /// When the alert stops firing unless posted again (RFC 3339).
    #[serde(rename = "endsAt")]
    ends_at: String,
    /// What identifies the alert (`alertname`, `target`, …), each value sanitised.
    labels: std::collections::BTreeMap<&'static str, String>,
    /// When it began firing (RFC 3339).
    #[serde(rename = "startsAt")]
    starts_at: String,
}

/// An alert's annotations: its message, sanitised and capped, and that message's first line.
#[derive(serde::Serialize)]
struct AnnotationsJson {
    description: String,
    summary: String,
}

/// Alertmanager's v2 body: an array of alerts, each with its labels, its
/// annotations (the message sanitised: no escape sequence reaches a chat or
/// a terminal through a receiver) and its times.
fn body<'a>(postings: impl Iterator<Item = &'a Posting>) -> String {
    let alerts: Vec<AlertJson> = postings
        .map(|posting| {
            let labels = posting
                .labels
                .iter()
                .map(|(name, value)| (*name, sanitize_text(value)))
                .collect();
            let description = capped(sanitize_text(&posting.message), ANNOTATION_CAP);
            let summary = description.lines().next().unwrap_or("").to_string();
            AlertJson {
                labels,
                annotations: AnnotationsJson {
                    summary,
                    description,
                },
                starts_at: posting.starts_at.to_string(),
                ends_at: posting.ends_at.to_string(),
            }
        })
        .collect();
    // Strings only: serialising cannot fail.
    serde_json::to_string(&alerts).unwrap_or_default()
}

fn capped(mut text: String, cap: usize) -> String {
    if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// This machine's name (the kernel's), for the `host` label of a local
/// target: two machines' `agent` sessions are two alerts, not one.
fn local_host_name() -> String {
    probes::fs::file::read_regular_text(std::path::Path::new("/proc/sys/kernel/hostname"), 256)
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_http_url_with_a_host_is_taken() {
        assert_eq!(
            parse_url("http://127.0.0.1:9093/").as_deref(),
            Ok("http://127.0.0.1:9093")
        );
        assert_eq!(
            parse_url("http://am.lan:9093/prefix").as_deref(),
            Ok("http://am.lan:9093/prefix")
        );
        assert!(parse_url("https://am:9093").unwrap_err().contains("no TLS"));
        assert!(
            parse_url("127.0.0.1:9093")
                .unwrap_err()
                .contains("not an http:// URL")
        );
        assert!(
            parse_url("http:///x")
                .unwrap_err()
                .contains("names no host")
        );
    }

    #[test]
    fn the_body_carries_labels_sanitised_annotations_and_rfc3339_times() {
        let mut book = AlertBook::new(
            TargetLabels {
                target: "box:agent".into(),
                host: "box".into(),
                session: "agent".into(),
                server: "/tmp/tmux-1000/default".into(),
            },
            Timing::for_interval(Duration::from_secs(1)),
        );
        let alert = watchdog::session::Alert {
            state: classify::State::Question,
            reason: watchdog::session::Reason::Question,
            message: "QUESTION on box:agent\u{1b}[31m: waiting\n\nDo you want to proceed?\u{7}"
                .into(),
            latch: watchdog::session::Latch::Escalation(ledger::session::EscalationKind::Question),
            record: ledger::session::SessionRecord::Progress { value: 0 },
        };
        let start = Timestamp::from_second(1_800_000_000).unwrap();
        book.raise(&alert, Some("claude"), start);
        let value: serde_json::Value = serde_json::from_str(&body(book.due(start).iter())).unwrap();
        assert_eq!(
            value,
            serde_json::json!([{
                "labels": {
                    "alertname": "BmbQuestion",
                    "target": "box:agent",
                    "host": "box",
                    "session": "agent",
                    "cli": "claude",
                    "server": "/tmp/tmux-1000/default",
                },
                "annotations": {
                    "summary": "QUESTION on box:agent: waiting",
                    "description": "QUESTION on box:agent: waiting\n\nDo you want to proceed?",
                },
                "startsAt": "2027-01-15T08:00:00Z",
                "endsAt": "2027-01-15T14:00:00Z",
            }])
        );
        assert_eq!(capped("ééé".into(), 3), "é…");
    }

    /// Found by a review: behind a redirect (an auth proxy's 302 to its login
    /// page) every alert was lost silently. A 3xx is a failed delivery.
    #[test]
    fn a_redirect_is_a_failed_delivery_not_followed() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::thread::spawn(move || {
            let mut seen = Vec::new();
            // The POST, and (were the redirect followed) the GET it becomes.
            listener.set_nonblocking(false).unwrap();
            for stream in listener.incoming().take(1) {
                let mut stream = stream.unwrap();
                let mut head = [0u8; 4096];
                let n = stream.read(&mut head).unwrap();
                seen.push(
                    String::from_utf8_lossy(&head[..n])
                        .lines()
                        .next()
                        .unwrap_or("")
                        .to_string(),
                );
                let _ = stream.write_all(
                    b"HTTP/1.1 302 Found\r\nLocation: /login\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
            seen
        });
        let sink = Alertmanager::new(
            &url,
            Duration::from_secs(30),
            "/tmp/tmux-0/default".into(),
            None,
        );
        let sent = sink.send("[]");
        let said =
            "answered 302 Found (a redirect, not followed: the URL must be Alertmanager's own)";
        assert_eq!(sent, Err(Unsent::Failed(said.to_string())));
        assert_eq!(requests.join().unwrap(), ["POST /api/v2/alerts HTTP/1.1"]);
    }
}

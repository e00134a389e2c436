//! `bmb-monitor status`: the board of every running `watch`, read from what
//! they publish (their board files on this machine, or their `/board.json`
//! with `--endpoint`), never by capturing a pane again. What a row says is
//! decided in `watchdog::session::board`; this is reading and printing.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use watchdog::Clock;
use watchdog::session::board::{Board, Freshness, Reading, Sample, Source, freshness, table, wire};

use crate::clock::SystemClock;
use crate::output::{escape_c1, hides_or_reorders, print, print_raw};

/// The largest board file or answer read (a monitor of thousands of targets
/// fits; anything larger is not a board).
const BOARD_CAP: u64 = 8 << 20;
/// How long one endpoint may take to answer.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(3);
/// A board left by a watcher that is gone is removed once its last cycle is
/// this old (a `kill -9`'d watcher never removes its own): said once, then
/// no longer shown at all.
const GONE_AGE_OUT_SECS: i64 = 600;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Redraw every `--interval` seconds until interrupted, like watch(1).
    #[arg(long)]
    watch: bool,
    /// Seconds between redraws with `--watch`.
    #[arg(long, value_name = "SECS", default_value_t = 2, value_parser = crate::secs(1))]
    interval: u64,
    /// A running monitor's listener (`host:port` or a URL, as given to its
    /// `--metrics-listen`), read instead of this machine's boards; repeatable.
    #[arg(long = "endpoint", value_name = "ADDR")]
    endpoints: Vec<String>,
    /// A `watch --config` file: its monitor's board is read from the file's
    /// `metrics_listen`; repeatable, beside --endpoint.
    #[arg(long = "config", value_name = "FILE")]
    configs: Vec<std::path::PathBuf>,
    /// A Prometheus that scrapes the watchers (`http://host:9090`): the
    /// board of every watcher it scrapes, read from its query API.
    #[arg(long, value_name = "URL")]
    prometheus: Option<String>,
}

pub(crate) fn run(mut args: Args) -> ExitCode {
    for path in &args.configs {
        match crate::watch::config_endpoint(path) {
            Ok(Some(endpoint)) => args.endpoints.push(endpoint),
            Ok(None) => {
                return crate::output::usage_error(
                    "status",
                    format_args!(
                        "{} has no metrics_listen, so its monitor serves no board to read: add one, or run `status` on its machine without --config",
                        path.display()
                    ),
                );
            }
            Err(lines) => {
                for line in lines {
                    crate::output::say(format_args!("bmb-monitor: status: {line}"));
                }
                return crate::exit::code(crate::exit::USAGE);
            }
        }
    }
    if let Some(bad) = args.endpoints.iter().find(|e| endpoint_url(e).is_none()) {
        return crate::output::usage_error(
            "status",
            format_args!(
                "--endpoint `{}` is not host:port or an http:// URL",
                shown_endpoint(bad)
            ),
        );
    }
    if let Some(url) = &args.prometheus
        && prometheus_url(url).is_none()
    {
        return crate::output::usage_error(
            "status",
            format_args!(
                "--prometheus `{}` is not an http:// URL or host:port",
                crate::redact::urls(url)
            ),
        );
    }
    if args.watch {
        probes::os::signals::install_stop_handler();
    }
    // What an answer from there may echo of their credentials (a proxy's
    // error body quoting the Basic header) is never printed.
    let asked: Vec<String> = args
        .endpoints
        .iter()
        .filter_map(|e| endpoint_url(e))
        .chain(args.prometheus.as_deref().and_then(prometheus_url))
        .collect();
    let unsecret = |text: String| {
        asked
            .iter()
            .fold(text, |text, url| crate::redact::with_secret_of(url, &text))
    };
    loop {
        let now = SystemClock.now();
        let mut sources = match &args.prometheus {
            Some(url) => read_prometheus(url, now),
            None => Vec::new(),
        };
        if args.prometheus.is_none() || !args.endpoints.is_empty() {
            sources.extend(read_sources(&args.endpoints, &board_dirs(), now));
        }
        if args.json {
            print(unsecret(render_json(&sources, now)));
        } else {
            let mut screen = String::new();
            if args.watch {
                // Home and clear, then the frame: a redraw, as watch(1) does.
                screen.push_str("\x1b[H\x1b[2J");
                screen.push_str(&format!(
                    "Every {}s: bmb-monitor status    {}\n\n",
                    args.interval,
                    SystemClock.hhmmss(now)
                ));
            }
            let width = probes::os::terminal::stdout_width();
            let mut lines = render_table(&sources, now, width, args.prometheus.as_deref());
            if args.watch
                && let Some(height) = probes::os::terminal::stdout_height()
            {
                // A redraw fits the screen, its frame line and the summary
                // and header kept: the least urgent rows give way.
                let room = height.saturating_sub(3).max(3);
                if lines.len() > room {
                    let hidden = lines.len() - (room - 1);
                    lines.truncate(room - 1);
                    lines.push(format!("… and {hidden} more rows (less urgent)"));
                }
            }
            for line in lines {
                screen.push_str(&for_terminal(&line));
                screen.push('\n');
            }
            print_raw(&unsecret(screen));
        }
        if !args.watch
            || !probes::os::signals::sleep_unless_stopped(Duration::from_secs(args.interval))
        {
            return crate::exit::code(crate::exit::OK);
        }
    }
}

/// Every board to show: the endpoints' when any are given (a config file's
/// list of endpoints goes here too), else this machine's board files.
pub(crate) fn read_sources(
    endpoints: &[String],
    board_dirs: &[std::path::PathBuf],
    now: i64,
) -> Vec<Source> {
    if endpoints.is_empty() {
        return board_dirs
            .iter()
            .flat_map(|dir| read_board_files(dir, now))
            .collect();
    }
    endpoints
        .iter()
        .map(|endpoint| Source {
            name: shown_endpoint(endpoint),
            reading: match fetch_board(endpoint) {
                // A board from the network: its pid is another machine's, so
                // only its age can tell a frozen monitor.
                Ok(board) => {
                    let fresh = freshness(&board, true, now);
                    Reading::Board(Box::new(board), fresh)
                }
                Err(why) => Reading::Unreachable(crate::redact::with_secret_of(
                    &endpoint_url(endpoint).unwrap_or_default(),
                    &why,
                )),
            },
        })
        .collect()
}

/// An endpoint as the table and messages show it: the password of its
/// userinfo (`http://admin:***@box:9464`) never printed.
fn shown_endpoint(endpoint: &str) -> String {
    let url = endpoint_url(endpoint)
        .unwrap_or_else(|| format!("http://{}", endpoint.trim_start_matches("http://")));
    crate::redact::with_secret_of(&url, endpoint)
}

fn read_board_files(dir: &Path, now: i64) -> Vec<Source> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let reading = match probes::fs::file::read_regular_text(&path, BOARD_CAP) {
                // The monitor ended between the listing and the read.
                Err(probes::fs::file::ReadError::Missing) => return None,
                Err(err) => Reading::Unreachable(format!("cannot read its board: {err}")),
                Ok(text) => match wire::from_json(&text) {
                    Ok(board) => {
                        let alive = probes::os::pid::Pid::new(board.pid)
                            .is_some_and(probes::os::process::is_alive);
                        let fresh = match freshness(&board, alive, now) {
                            // Aged out: removed, and said this once.
                            Freshness::Gone(why)
                                if now.saturating_sub(board.updated) > GONE_AGE_OUT_SECS =>
                            {
                                match std::fs::remove_file(&path) {
                                    Ok(()) => Freshness::Gone(format!("{why}; its board removed")),
                                    Err(err) => Freshness::Gone(format!(
                                        "{why}; its board {} could not be removed: {err}",
                                        path.display()
                                    )),
                                }
                            }
                            fresh => fresh,
                        };
                        Reading::Board(Box::new(board), fresh)
                    }
                    Err(err) => Reading::Unreachable(format!("not a board: {err}")),
                },
            };
            Some(Source {
                name: path.display().to_string(),
                reading,
            })
        })
        .collect()
}

/// `host:port`, `http://host:port` or a full URL; a bare listener address
/// (or one ending in `/metrics`) is read at its `/board.json`.
fn endpoint_url(endpoint: &str) -> Option<String> {
    let rest = endpoint
        .strip_prefix("http://")
        .unwrap_or(endpoint)
        .trim_end_matches('/');
    if rest.is_empty() || rest.contains("://") || rest.chars().any(char::is_whitespace) {
        return None;
    }
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, String::new()),
    };
    if !authority.contains(':') {
        return None;
    }
    let path = match path.as_str() {
        "" | "/metrics" => "/board.json".to_string(),
        _ => path,
    };
    Some(format!("http://{authority}{path}"))
}

fn fetch_board(endpoint: &str) -> Result<Board, String> {
    let url = endpoint_url(endpoint).ok_or_else(|| "not host:port".to_string())?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(ENDPOINT_TIMEOUT))
        // A monitor's endpoint is asked directly, never through a proxy
        // the environment names.
        .proxy(None)
        .build()
        .into();
    let mut response = agent.get(&url).call().map_err(|err| err.to_string())?;
    let text = response
        .body_mut()
        .with_config()
        .limit(BOARD_CAP)
        .read_to_string()
        .map_err(|err| err.to_string())?;
    wire::from_json(&text).map_err(|err| format!("{url} answered with no board: {err}"))
}

/// Where this machine's watchers of this user keep their boards: under
/// `$XDG_STATE_HOME` as this shell has it, and under the default a service
/// has (`~/.local/state` of the passwd home, and of `$HOME`), each once.
fn board_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs = vec![crate::state_dir().join("board")];
    let homes = [
        probes::os::user::passwd_home(),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
    ];
    for home in homes.into_iter().flatten() {
        let dir = home.join(".local/state/bmb-monitor/board");
        let same = |d: &std::path::PathBuf| {
            d == &dir
                || std::fs::canonicalize(d)
                    .ok()
                    .is_some_and(|d| std::fs::canonicalize(&dir).is_ok_and(|dir| dir == d))
        };
        if !dirs.iter().any(same) {
            dirs.push(dir);
        }
    }
    dirs
}

fn render_table(
    sources: &[Source],
    now: i64,
    width: Option<usize>,
    prometheus: Option<&str>,
) -> Vec<String> {
    if sources.is_empty() {
        if let Some(url) = prometheus {
            return vec![format!(
                "Prometheus at {url} scrapes no watcher (no bmb_watch_target_state series)"
            )];
        }
        let looked: Vec<String> = board_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        return vec![format!(
            "no running monitor on this machine (no board under {})",
            looked.join(" nor under ")
        )];
    }
    table(sources, now, width)
}

/// `http://host:port[/prefix]` (or `host:port`), without a trailing slash.
fn prometheus_url(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .unwrap_or(url)
        .trim_end_matches('/');
    let authority = rest.split('/').next().unwrap_or("");
    if rest.is_empty()
        || rest.contains("://")
        || rest.chars().any(char::is_whitespace)
        || !authority.contains(':')
    {
        return None;
    }
    Some(format!("http://{rest}"))
}

/// The board of every watcher a Prometheus scrapes, from two instant
/// queries (the board's series, and `up`); a Prometheus that does not
/// answer is one unreachable row.
fn read_prometheus(url: &str, now: i64) -> Vec<Source> {
    let read = || -> Result<Vec<Source>, String> {
        let base = prometheus_url(url).ok_or_else(|| "not a URL".to_string())?;
        let samples = prometheus_query(&base, watchdog::session::board::BOARD_QUERY)?;
        let up = prometheus_query(&base, "up")?;
        Ok(watchdog::session::board::from_samples(&samples, &up, now))
    };
    read().unwrap_or_else(|why| {
        vec![Source {
            name: crate::redact::urls(&format!("Prometheus {url}")),
            reading: Reading::Unreachable(crate::redact::with_secret_of(
                &prometheus_url(url).unwrap_or_default(),
                &why,
            )),
        }]
    })
}

/// One instant query (`GET /api/v1/query`): its vector's samples.
fn prometheus_query(base: &str, query: &str) -> Result<Vec<Sample>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(ENDPOINT_TIMEOUT))
        .proxy(None)
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("{base}/api/v1/query");
    let mut response = agent
        .get(&url)
        .query("query", query)
        .call()
        .map_err(|err| err.to_string())?;
    let status = response.status();
    let text = response
        .body_mut()
        .with_config()
        .limit(BOARD_CAP)
        .read_to_string()
        .map_err(|err| err.to_string())?;
    let answer: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| format!("{url} answered {status} with no JSON: {err}"))?;
    if answer["status"] != "success" {
        return Err(format!(
            "{url} answered {status}: {}",
            answer["error"].as_str().unwrap_or("no error said")
        ));
    }
    let result = answer["data"]["result"]
        .as_array()
        .ok_or_else(|| format!("{url} answered no vector"))?;
    Ok(result
        .iter()
        .filter_map(|series| {
            let labels = series["metric"]
                .as_object()?
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            let value = series["value"][1].as_str()?.parse().ok()?;
            Some(Sample { labels, value })
        })
        .collect())
}

/// The version of `status --json`: the fleet's boards, read from other machines, for tools on
/// yet others. Raised when a field changes meaning or goes; a new field does not raise it.
const STATUS_JSON_VERSION: u32 = 1;

/// `status --json`: every source, with its board or why it could not be read.
#[derive(serde::Serialize)]
struct StatusJson<'a> {
    /// [`STATUS_JSON_VERSION`].
    version: u32,
    /// When the sources were read (epoch seconds).
    time: i64,
    /// Each source, in the order the board lists them.
    sources: Vec<SourceJson<'a>>,
}

/// One source of `status --json`: a monitor's board file or endpoint.
#[derive(serde::Serialize)]
struct SourceJson<'a> {
    /// The board file or the endpoint, as the table names it.
    source: &'a str,
    /// Whether its board was read.
    reachable: bool,
    /// Why it could not be read, when it could not.
    error: Option<&'a str>,
    /// Why its board is old (its monitor slow, or gone), when it is.
    stale: Option<&'a str>,
    /// The board as the monitor wrote it (the same object as its `/board.json`).
    board: Option<wire::BoardOut<'a>>,
}

/// One object: each source with its board (or why it could not be read).
fn render_json(sources: &[Source], now: i64) -> String {
    let sources = sources
        .iter()
        .map(|source| match &source.reading {
            Reading::Unreachable(why) => SourceJson {
                source: &source.name,
                reachable: false,
                error: Some(why),
                stale: None,
                board: None,
            },
            Reading::Board(board, fresh) => SourceJson {
                source: &source.name,
                reachable: true,
                error: None,
                stale: match fresh {
                    Freshness::Live => None,
                    Freshness::Stale(why) | Freshness::Gone(why) => Some(why),
                },
                board: Some(wire::BoardOut::from(&**board)),
            },
        })
        .collect();
    let status = StatusJson {
        version: STATUS_JSON_VERSION,
        time: now,
        sources,
    };
    // A board is strings, numbers and lists: serialising it cannot fail.
    escape_c1(&serde_json::to_string(&status).unwrap_or_default())
}

/// A table line as it may reach a terminal: every field came from a board
/// (an endpoint's, possibly hostile), so besides the control characters
/// (ESC, C1, DEL) every character that reorders, hides or breaks text is
/// shown as `?`, one for one, so the columns stay aligned.
fn for_terminal(line: &str) -> String {
    line.chars()
        .map(|c| {
            if c.is_control() || hides_or_reorders(c) {
                '?'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// Found by a review (issue 19): the table let a hostile endpoint's
    /// right-to-left override and line separator through to the terminal.
    #[test]
    fn a_table_line_shows_what_reorders_or_hides_text_as_a_question_mark() {
        assert_eq!(
            super::for_terminal(
                "ag\u{202e}tne\u{1b}[2J x\u{2028}y\u{9b}z\u{7f} \u{200b}é\u{e0041}"
            ),
            "ag?tne?[2J x?y?z? ?é?"
        );
        let json = crate::output::escape_c1(
            &serde_json::json!({ "s": "a\u{202e}b\u{e0041}" }).to_string(),
        );
        assert_eq!(json, r#"{"s":"a\u202eb\udb40\udc41"}"#);
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["s"], "a\u{202e}b\u{e0041}");
    }

    use super::endpoint_url;

    #[test]
    fn an_endpoint_is_read_at_its_board() {
        let cases = [
            ("127.0.0.1:9464", Some("http://127.0.0.1:9464/board.json")),
            ("http://box1:9464/", Some("http://box1:9464/board.json")),
            ("box1:9464/metrics", Some("http://box1:9464/board.json")),
            (
                "box1:9464/fleet/board.json",
                Some("http://box1:9464/fleet/board.json"),
            ),
            ("box1", None),
            ("https://box1:9464", None),
            ("", None),
            ("a b:1", None),
        ];
        for (given, expected) in cases {
            assert_eq!(endpoint_url(given).as_deref(), expected, "{given}");
        }
    }
}

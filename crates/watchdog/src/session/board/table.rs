//! The board as a person reads it at a terminal: a summary line (counts per
//! state, the unreachable hosts, the boards of watchers that are gone), a
//! header, then one row per target, the urgent first (questions, spent
//! budgets, unreachable hosts and endpoints, frozen watchers), each fitted
//! to the terminal's width. What a cell says is decided here; the cells'
//! own text comes from the board and is made printable first.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::age::age;
use super::{Board, Freshness, HostRow, Reading, Source};

/// The columns, in order. `TARGET` is the target as given (`gpu3:agent-1`,
/// or `api` on this machine): the host is said once, in it.
const HEADER: [&str; 7] = [
    "TARGET",
    "CLI",
    "STATE",
    "FOR",
    "NUDGES",
    "LAST ACTION",
    "WHY",
];
const WHY: usize = 6;
const LAST_ACTION: usize = 5;
const TARGET: usize = 0;
/// The widest a cell may be, whatever room the terminal gives.
const CELL_MAX: [usize; 7] = [40, 10, 11, 6, 7, 56, 90];
/// The narrowest the columns that give up room go: the target, the why.
const TARGET_MIN: usize = 12;
const WHY_MIN: usize = 16;
/// Below this much room for the why, the last action gives its column to it.
const WHY_WANTED: usize = 30;
const GAP: usize = 2;

/// How urgent a row is: the board is sorted by it, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Urgency {
    Question,
    BudgetSpent,
    Unreachable,
    Frozen,
    Blocked,
    Stalled,
    Unread,
    Working,
}

struct Row {
    urgency: Urgency,
    cells: [String; 7],
}

/// What the summary line counts.
#[derive(Default)]
struct Summary {
    targets: usize,
    question: usize,
    budget_spent: usize,
    stalled: usize,
    blocked: usize,
    working: usize,
    unread: usize,
    frozen: usize,
    /// Hosts and endpoints that could not be reached, with how many targets each stands for.
    unreachable: Vec<(String, Option<usize>)>,
    /// Boards of watchers that are gone: why (their rows are not shown).
    gone: Vec<String>,
}

impl Summary {
    /// The line, in `width` columns when known. A line that does not fit
    /// counts the unreachable hosts among the urgent states (`5
    /// unreachable`, after the spent budgets), so the cut at the width never
    /// hides that some are down; their names follow, as far as they fit.
    fn fitted(&self, width: Option<usize>) -> String {
        let full = self.line(false);
        match width {
            Some(width) if columns_of(&full) > width => fit(&self.line(true), Some(width)),
            _ => full,
        }
    }

    fn line(&self, count_unreachable: bool) -> String {
        let mut parts = vec![format!(
            "{} target{}",
            self.targets,
            if self.targets == 1 { "" } else { "s" }
        )];
        let unreachable = if count_unreachable {
            self.unreachable.len()
        } else {
            0
        };
        for (count, word) in [
            (self.question, "QUESTION"),
            (self.budget_spent, "budget spent"),
            (unreachable, "unreachable"),
            (self.blocked, "BLOCKED"),
            (self.stalled, "STALLED"),
            (self.working, "WORKING"),
            (self.unread, "unread"),
            (self.frozen, "stale"),
        ] {
            if count > 0 {
                parts.push(format!("{count} {word}"));
            }
        }
        let mut line = parts.join(" · ");
        if !self.unreachable.is_empty() {
            let hosts: Vec<String> = self
                .unreachable
                .iter()
                .map(|(name, count)| match count {
                    Some(n) => format!("{name} ({n})"),
                    None => name.clone(),
                })
                .collect();
            let _ = write!(line, "; unreachable: {}", hosts.join(", "));
        }
        for why in &self.gone {
            let _ = write!(line, "; not shown: {why}");
        }
        line
    }
}

/// The board as a person reads it: the summary line, the header, then every
/// row, urgent first, in at most `width` columns when the terminal's width
/// is known (`None`: each column as wide as its widest cell, up to its cap).
pub fn table(sources: &[Source], now: i64, width: Option<usize>) -> Vec<String> {
    let mut summary = Summary::default();
    let mut rows: Vec<Row> = Vec::new();
    let servers = Servers::of(sources);
    for source in sources {
        match &source.reading {
            Reading::Unreachable(why) => {
                summary.unreachable.push((source.name.clone(), None));
                rows.push(Row {
                    urgency: Urgency::Unreachable,
                    cells: [
                        format!("{} *", source.name),
                        "-".into(),
                        "unreachable".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        why.clone(),
                    ],
                });
            }
            Reading::Board(board, Freshness::Gone(why)) => {
                let n = board.targets.len();
                summary.gone.push(format!(
                    "{n} target{} of a watcher that is gone ({why})",
                    if n == 1 { "" } else { "s" }
                ));
            }
            Reading::Board(board, freshness) => {
                board_rows(
                    &source.name,
                    board,
                    freshness,
                    now,
                    &servers,
                    &mut summary,
                    &mut rows,
                );
            }
        }
    }
    // A stable sort: within one urgency, the monitors' own order.
    rows.sort_by_key(|row| row.urgency);
    let cells: Vec<[String; 7]> = std::iter::once(HEADER.map(str::to_string))
        .chain(rows.into_iter().map(|row| row.cells))
        .map(|row| row.map(|cell| squeeze(&printable(&cell))))
        .collect();
    let mut lines = vec![summary.fitted(width)];
    lines.extend(lay_out(&cells, width));
    lines
}

/// The targets whose name two tmux servers share (two watchers, or one
/// watching two servers, each with a session `agent`), and how each of
/// their servers is shown beside it: its socket file's name (`[a]`), or the
/// whole path when two of them share that name too. A target of one name
/// on servers of one path in two sources (a watcher per host, each watching
/// its own `agent` on its own machine's default server, read through
/// Prometheus or their endpoints) is told apart by its source instead
/// (`[gpu1:9184]`), with the server first when that differs too.
struct Servers {
    shown: BTreeMap<(String, String, String), String>,
}

/// A source as a row's label: an instance or endpoint without its scheme
/// (`gpu1:9184`), a board file by its name (`4242.json`).
fn source_label(source: &str) -> String {
    let source = source.strip_prefix("http://").unwrap_or(source);
    if source.ends_with(".json") {
        return source.rsplit('/').next().unwrap_or(source).to_string();
    }
    source.to_string()
}

impl Servers {
    fn of(sources: &[Source]) -> Servers {
        // Per target: each (source, server) it is on.
        let mut by_target: BTreeMap<&str, BTreeSet<(&str, &str)>> = BTreeMap::new();
        for source in sources {
            if let Reading::Board(board, freshness) = &source.reading
                && !matches!(freshness, Freshness::Gone(_))
            {
                for row in &board.targets {
                    by_target
                        .entry(&row.target)
                        .or_default()
                        .insert((&source.name, row.server.as_deref().unwrap_or("")));
                }
            }
        }
        let short = |server: &str| -> String {
            match server.rsplit('/').next() {
                Some(name) if !name.is_empty() => name.to_string(),
                _ if server.is_empty() => "?".to_string(),
                _ => server.to_string(),
            }
        };
        let mut shown = BTreeMap::new();
        for (target, places) in by_target.into_iter().filter(|(_, p)| p.len() > 1) {
            let servers: BTreeSet<&str> = places.iter().map(|(_, server)| *server).collect();
            let names: BTreeSet<String> = servers.iter().map(|s| short(s)).collect();
            let whole = names.len() < servers.len();
            for (source, server) in &places {
                let mut label = Vec::new();
                if servers.len() > 1 {
                    label.push(if whole {
                        server.to_string()
                    } else {
                        short(server)
                    });
                }
                if places.iter().filter(|(_, s)| s == server).count() > 1 {
                    label.push(source_label(source));
                }
                shown.insert(
                    (source.to_string(), target.to_string(), server.to_string()),
                    label.join(" "),
                );
            }
        }
        Servers { shown }
    }

    /// The TARGET cell: the target, and its server (or its source) when
    /// another row has one of that name.
    fn cell(&self, source: &str, row: &super::TargetRow) -> String {
        let key = (
            source.to_string(),
            row.target.clone(),
            row.server.clone().unwrap_or_default(),
        );
        match self.shown.get(&key) {
            Some(label) => format!("{} [{label}]", row.target),
            None => row.target.clone(),
        }
    }
}

fn board_rows(
    source: &str,
    board: &Board,
    freshness: &Freshness,
    now: i64,
    servers: &Servers,
    summary: &mut Summary,
    rows: &mut Vec<Row>,
) {
    let stale = match freshness {
        Freshness::Stale(why) => Some(why),
        _ => None,
    };
    let down: Vec<&HostRow> = board
        .hosts
        .iter()
        .filter(|h| !h.reachable && stale.is_none())
        .collect();
    for host in &down {
        let count = board.targets.iter().filter(|t| t.host == host.host).count();
        summary.targets += count;
        summary.unreachable.push((host.host.clone(), Some(count)));
        rows.push(Row {
            urgency: Urgency::Unreachable,
            cells: [
                format!("{}:* ({count})", host.host),
                "-".into(),
                "unreachable".into(),
                age(now - host.since),
                "-".into(),
                "-".into(),
                host.error.clone().unwrap_or_default(),
            ],
        });
    }
    for row in &board.targets {
        if down.iter().any(|h| h.host == row.host) {
            continue;
        }
        summary.targets += 1;
        let spent = row.state.as_deref() == Some("STALLED")
            && row.budget > 0
            && row.nudges_used >= row.budget;
        let urgency = match (stale, row.state.as_deref()) {
            (Some(_), _) => Urgency::Frozen,
            (None, Some("QUESTION")) => Urgency::Question,
            (None, Some("STALLED")) if spent => Urgency::BudgetSpent,
            (None, Some("BLOCKED")) => Urgency::Blocked,
            (None, Some("STALLED")) => Urgency::Stalled,
            (None, Some("WORKING")) => Urgency::Working,
            (None, _) => Urgency::Unread,
        };
        *match urgency {
            Urgency::Question => &mut summary.question,
            Urgency::BudgetSpent => &mut summary.budget_spent,
            Urgency::Blocked => &mut summary.blocked,
            Urgency::Stalled => &mut summary.stalled,
            Urgency::Working => &mut summary.working,
            Urgency::Frozen => &mut summary.frozen,
            Urgency::Unread | Urgency::Unreachable => &mut summary.unread,
        } += 1;
        let state = match (stale, &row.state) {
            (Some(_), _) => "stale".to_string(),
            (None, Some(state)) => state.clone(),
            (None, None) => "?".to_string(),
        };
        let last = row.last_action.as_ref().map_or_else(
            || "-".to_string(),
            |a| format!("{} ({} ago)", a.what, age(now - a.at)),
        );
        let why = match (stale, &row.error) {
            (Some(why), _) => why.clone(),
            (None, Some(error)) => format!("cannot read the pane: {error}"),
            (None, None) => {
                // The last action's grounds while it is about this state,
                // else the verdict's own.
                let (rule, evidence) = match &row.last_action {
                    Some(a) if a.at >= row.since => (&a.rule, &a.evidence),
                    _ => (&row.rule, &row.evidence),
                };
                match (rule, evidence) {
                    (Some(rule), Some(evidence)) => format!("{rule}: {}", evidence.trim()),
                    (Some(rule), None) => rule.clone(),
                    _ => "-".to_string(),
                }
            }
        };
        let nudges = if row.budget == 0 {
            // Read from metrics, which carry the nudges used, not the budget.
            format!("{}", row.nudges_used)
        } else {
            format!("{}/{}", row.nudges_used, row.budget)
        };
        rows.push(Row {
            urgency,
            cells: [
                servers.cell(source, row),
                row.cli.clone().unwrap_or_else(|| "?".into()),
                state,
                if row.polled {
                    age(now - row.since)
                } else {
                    "-".into()
                },
                nudges,
                last,
                why,
            ],
        });
    }
}

/// The columns' widths for `width` (each column as wide as its widest cell,
/// up to its cap; then the why, the last action and the target give up room,
/// in that order), and the rows laid out in them.
fn lay_out(cells: &[[String; 7]], width: Option<usize>) -> Vec<String> {
    let mut widths = [0usize; 7];
    for row in cells {
        for ((width, cell), max) in widths.iter_mut().zip(row).zip(CELL_MAX) {
            *width = (*width).max(columns_of(cell).min(max));
        }
    }
    let mut shown = [true; 7];
    if let Some(room) = width {
        let natural_why = widths[WHY];
        let total = |widths: &[usize; 7], shown: &[bool; 7]| -> usize {
            let columns: Vec<usize> = (0..7).filter(|&c| shown[c]).map(|c| widths[c]).collect();
            columns.iter().sum::<usize>() + GAP * columns.len().saturating_sub(1)
        };
        let over =
            |widths: &[usize; 7], shown: &[bool; 7]| total(widths, shown).saturating_sub(room);
        // The why first, down to what still says something.
        widths[WHY] -= over(&widths, &shown).min(widths[WHY].saturating_sub(WHY_WANTED));
        if over(&widths, &shown) > 0 {
            // Then the last action gives its column to the why.
            shown[LAST_ACTION] = false;
            let others = total(&widths, &shown) - widths[WHY];
            widths[WHY] = natural_why.min(room.saturating_sub(others));
        }
        widths[TARGET] -= over(&widths, &shown).min(widths[TARGET].saturating_sub(TARGET_MIN));
        widths[WHY] -= over(&widths, &shown).min(widths[WHY].saturating_sub(WHY_MIN));
    }
    cells
        .iter()
        .map(|row| {
            let mut line = String::new();
            let last = (0..7).rfind(|&c| shown[c]).unwrap_or(6);
            for column in (0..7).filter(|&c| shown[c]) {
                let error = row[2] == "unreachable" || looks_like_error(&row[WHY]);
                let cell = if column == WHY && row[0] != HEADER[0] && error {
                    tail(&row[column], widths[column])
                } else {
                    cut(&row[column], widths[column])
                };
                if column == last {
                    line.push_str(&cell);
                } else {
                    // Padded in terminal cells: `{:<width$}` counts characters.
                    line.push_str(&cell);
                    let pad = widths[column].saturating_sub(columns_of(&cell)) + GAP;
                    let _ = write!(line, "{:pad$}", "");
                }
            }
            fit(line.trim_end(), width)
        })
        .collect()
}

/// An error's end says what failed (a command's error ends with what it
/// printed): such a why keeps its end when cut.
fn looks_like_error(why: &str) -> bool {
    why.starts_with("cannot read the pane: ")
        || why.starts_with('`')
        || why.contains("exited with code")
        || why.contains("ssh: ")
}

/// A line cut to the terminal's width, if known.
fn fit(line: &str, width: Option<usize>) -> String {
    match width {
        Some(width) => cut(line, width),
        None => line.to_string(),
    }
}

/// A cell never carries a control character (pane text and errors can).
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A reason as one line of words: no leading or trailing blanks, no run of
/// blanks inside (a pane's line keeps its padding, a dialog's its columns).
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The terminal cells `text` takes: two for a wide (CJK, emoji)
/// character, none for a combining one.
fn columns_of(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// The characters of `chars` that fit in `room` cells, in their order.
fn fitting(chars: impl Iterator<Item = char>, room: usize) -> Vec<char> {
    let mut used = 0;
    chars
        .take_while(|&c| {
            used += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            used <= room
        })
        .collect()
}

/// The end of `text` in `max` cells, `…` first when it is cut.
pub fn tail(text: &str, max: usize) -> String {
    if columns_of(text) <= max {
        return text.to_string();
    }
    let mut kept = fitting(text.chars().rev(), max.saturating_sub(1));
    kept.push('…');
    kept.into_iter().rev().collect()
}

/// The start of `text` in `max` cells, `…` last when it is cut.
fn cut(text: &str, max: usize) -> String {
    if columns_of(text) <= max {
        return text.to_string();
    }
    let mut kept: String = fitting(text.chars(), max.saturating_sub(1))
        .into_iter()
        .collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_keeps_its_end_which_says_what_failed() {
        let long = format!(
            "`ssh {} host tmux` exited with code 255: ssh: Connection refused",
            "-o X ".repeat(30)
        );
        let kept = tail(&long, 90);
        assert!(
            kept.starts_with('…') && kept.ends_with("ssh: Connection refused"),
            "{kept}"
        );
        assert_eq!(kept.chars().count(), 90);
        assert_eq!(tail("short", 90), "short");
    }

    #[test]
    fn a_reason_is_squeezed_to_one_line_of_words() {
        assert_eq!(
            squeeze("  permission-dialog:   Do you want   to proceed?      "),
            "permission-dialog: Do you want to proceed?"
        );
    }
}

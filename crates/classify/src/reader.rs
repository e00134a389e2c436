//! The rules engine: finds the screen's structure from the bottom up, then
//! reads each signal only in the region where it can be live.
//!
//! Precedence is WORKING > QUESTION > the work probe: a turn that is
//! rendering is not parked, whatever its scrollback says.

use regex::Regex;

use crate::echo::Echo;
use crate::ink::{self, Ink};
use crate::profile::{Profile, Profiles};
use crate::rule::{Region, RegionKind, Rule};
use crate::tail::Tail;
use crate::{BoxText, Context, Evidence, State, UsageLimit, Verdict, Work};

/// How far above the bottom the input box's closing rule is looked for. The
/// box is found by its structure (rule, prompt line, rule), never cut at a
/// line count (seed defect 5); this only bounds the search, and leaves room
/// for what Claude Code 2.1 lists under its footer (one row per background
/// agent).
const FOOTER_MAX_LINES: usize = 24;
/// A pending message in the input box can be long (seed defect 5); past this
/// many lines we stop looking for the box's top border.
const BOX_MAX_LINES: usize = 500;
/// Between the spinner row and the box: a `⎿  Tip:` line, a task list (blank rows not counted).
const LIVE_ROWS_MAX_LINES: usize = 16;
/// How far up a reply's text may run above the input box.
const TRANSCRIPT_BLOCK_MAX_LINES: usize = 200;
/// How far above the bottom a dialog may start.
const DIALOG_MAX_LINES: usize = 80;
/// A dialog spans at most this many rule lines (its own top and one inside).
const DIALOG_MAX_RULES: usize = 2;
/// Without an input box, only the last few lines can be live chrome.
const BOXLESS_CHROME_LINES: usize = 3;
/// How far above the bottom a live selection hint sits (every real capture: 0 or 1).
const HINT_MAX_FROM_BOTTOM: usize = 4;
/// How many bottom lines `auto` reads to pick a profile.
const DETECT_LINES: usize = 12;
/// How many non-blank lines above the box (or above the bottom) a usage
/// limit's line may stand: the newest turn's end, never older scrollback.
const LIMIT_MAX_LINES: usize = 16;
/// How many lines under a usage-limit line's start its wrapped rest may take.
const LIMIT_WRAPPED_LINES: usize = 2;

/// The input box, as indices into the tail (0 = bottom line).
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputBox {
    /// The closing rule line.
    pub bottom: usize,
    /// The opening rule line (above `bottom`, so a larger index).
    pub top: usize,
}

pub(crate) fn classify(pane: &str, work: Work, context: &Context<'_>) -> Verdict {
    let mut reader = Reader::new(pane, context);
    let decision = reader.decide(work);
    let Decision {
        state,
        rule,
        region,
        evidence,
        dialog,
        input_box,
        box_text,
    } = decision;
    let evidence = evidence.and_then(|i| reader.evidence(i));
    let (note, usage_limit) = match state {
        State::Stalled | State::Blocked => (reader.stop_note(), reader.usage_limit()),
        State::Working | State::Question => (None, None),
    };
    Verdict {
        state,
        profile: reader.profile.name.clone(),
        rule,
        region,
        evidence,
        dialog,
        input_box,
        note,
        box_text,
        usage_limit,
    }
}

/// The profile whose detection markers hit most of the pane's bottom lines,
/// or `None` when no profile's marker is there (a reply filling the screen).
/// A caller that watches a pane over time can keep the last one detected.
pub fn detect_profile<'p>(pane: &str, profiles: &'p Profiles) -> Option<&'p Profile> {
    let mut tail = Tail::new(pane);
    let (hits, profile) = best_profile(&mut tail, profiles);
    (hits > 0).then_some(profile)
}

/// `auto`: the profile whose detection markers hit most of the bottom lines;
/// ties and a silent pane go to the first (Claude Code).
pub(crate) fn pick_profile<'p>(tail: &mut Tail<'_>, profiles: &'p Profiles) -> &'p Profile {
    best_profile(tail, profiles).1
}

fn best_profile<'p>(tail: &mut Tail<'_>, profiles: &'p Profiles) -> (usize, &'p Profile) {
    let mut best = (0, profiles.first());
    // A user's profile that hits at all outranks the built-ins (see `Profile::user`).
    let mut best_rank = (false, 0);
    for profile in profiles.iter() {
        let Some(detect) = &profile.detect else {
            continue;
        };
        let hits = (0..DETECT_LINES)
            .filter(|&i| tail.text(i).is_some_and(|t| detect.is_match(t)))
            .count();
        let rank = (profile.user && hits > 0, hits);
        if hits > 0 && rank > best_rank {
            best_rank = rank;
            best = (hits, profile);
        }
    }
    best
}

struct Decision {
    state: State,
    rule: Rule,
    region: Region,
    evidence: Option<usize>,
    dialog: Vec<String>,
    /// The profile's live input box (or input line) is on screen.
    input_box: bool,
    /// What that box holds.
    box_text: BoxText,
}

pub(crate) struct Reader<'a, 'p> {
    pub tail: Tail<'a>,
    pub profile: &'p Profile,
    pub echo: &'p Echo,
}

impl<'a, 'p> Reader<'a, 'p> {
    /// Reads `pane` with the context's profile, or the one `auto` picks from its bottom lines.
    pub(crate) fn new(pane: &'a str, context: &Context<'p>) -> Reader<'a, 'p> {
        let mut tail = Tail::new(pane);
        let profile = context
            .profile
            .unwrap_or_else(|| pick_profile(&mut tail, context.profiles));
        Reader {
            tail,
            profile,
            echo: context.echo,
        }
    }
}

impl Reader<'_, '_> {
    fn decide(&mut self, work: Work) -> Decision {
        if self.tail.get(0).is_none() {
            let region = Region {
                kind: RegionKind::Empty,
                first: 0,
                last: 0,
            };
            return self.stop(work, region, None);
        }
        match self.find_input_box() {
            Some(input) => {
                let typed = self.box_text(input);
                Decision {
                    input_box: !self.foreign_under_box(input),
                    ..self.decide_with_box(work, input, typed)
                }
            }
            None => self.decide_without_box(work),
        }
    }

    fn decide_with_box(&mut self, work: Work, input: InputBox, typed: BoxText) -> Decision {
        let footer = self.region(RegionKind::Footer, 0, input.bottom.saturating_sub(1));
        for i in 0..input.bottom {
            if let Some(rule) = self.live_marker(
                i,
                &[
                    (Rule::BusyFooter, Field::Busy),
                    (Rule::BackgroundWork, Field::Background),
                ],
            ) {
                return self.working(rule, footer, i);
            }
        }
        if let Some((rule, i)) = self.live_row(input) {
            let region = self.region(RegionKind::LiveRows, input.top + 1, i);
            return self.working(rule, region, i);
        }
        if let Some(i) = self.reply_without_turn_end(input) {
            let region = self.region(RegionKind::LiveRows, input.top + 1, i);
            return self.working(Rule::StreamingReply, region, i);
        }
        if let Some(i) = self.reply_under_draft(input, &typed) {
            let region = self.region(RegionKind::LiveRows, input.top + 1, i);
            return self.working(Rule::StreamingUnderDraft, region, i);
        }
        // A CLI that draws its dialogs under the box (Gemini) leaves the
        // submitted prompt's box above them: a question below the box is live.
        if input.bottom > 0
            && let Some(decision) = self.dialog(input.bottom - 1)
        {
            return decision;
        }
        // The box is live input, so nothing above it is a pending question.
        let region = self.region(RegionKind::InputBox, input.bottom, input.top);
        Decision {
            box_text: typed,
            ..self.stop(work, region, Some(input.top - 1))
        }
    }

    /// Under a live box a CLI draws only its footer, indented; a line at
    /// column zero there is something else drawing over the agent's last
    /// frame (a shell prompt after it exited, `[1]+ Stopped`), so the box
    /// cannot be trusted to take a keystroke. Our own typed text echoed
    /// there (a terminal in cooked mode) is no other program's (seed defect 1).
    fn foreign_under_box(&mut self, input: InputBox) -> bool {
        let echo = self.echo;
        (0..input.bottom).any(|i| {
            self.tail.get(i).is_some_and(|line| {
                !line.is_blank()
                    && !line.is_indented()
                    && !matches_opt(&self.profile.footer, &line.text)
                    && !echo.matches(&line.text)
            })
        })
    }

    fn decide_without_box(&mut self, work: Work) -> Decision {
        let chrome = self.region(RegionKind::Bottom, 0, BOXLESS_CHROME_LINES - 1);
        for i in 0..BOXLESS_CHROME_LINES {
            let markers = [
                (Rule::BusyFooter, Field::Busy),
                (Rule::Spinner, Field::Spinner),
                (Rule::BackgroundWork, Field::Background),
            ];
            if let Some(rule) = self.live_marker(i, &markers) {
                return self.working(rule, chrome, i);
            }
        }
        if let Some(decision) = self.inline_input(work) {
            return decision;
        }
        let top = self.dialog_top();
        if let Some(decision) = self.dialog(top) {
            return decision;
        }
        let bottom = self.region(RegionKind::Bottom, 0, 0);
        let edge = (0..FOOTER_MAX_LINES).find(|&i| {
            self.tail
                .text(i)
                .is_some_and(|t| matches_opt(&self.profile.input_edge, t))
        });
        match edge {
            Some(i) => {
                let (box_text, top) = self.edge_box_text(i);
                let region = self.region(RegionKind::InputBox, i, top);
                let under = InputBox { bottom: i, top: i };
                Decision {
                    input_box: !self.foreign_under_box(under),
                    box_text,
                    ..self.stop(work, region, Some(i))
                }
            }
            None => self.stop(work, bottom, Some(0)),
        }
    }

    /// A question by structure in the lines `0..=top`, as a QUESTION verdict
    /// carrying the dialog's lines (rule lines left out) for the relay.
    fn dialog(&mut self, top: usize) -> Option<Decision> {
        let (rule, evidence) = self.question(top)?;
        let region = self.region(RegionKind::Dialog, 0, top);
        let profile = self.profile;
        let is_rule =
            |t: &str| matches_opt(&profile.box_top, t) || matches_opt(&profile.box_bottom, t);
        // Blank rows and a block's bare bar at its edges are no part of what is asked.
        let empty = |t: &str| {
            t.trim().is_empty()
                || profile
                    .dialog_line
                    .as_ref()
                    .and_then(|r| r.find(t))
                    .is_some_and(|m| t[m.end()..].trim().is_empty())
        };
        let mut dialog: Vec<String> = (0..=top)
            .rev()
            .filter_map(|i| {
                self.tail
                    .text(i)
                    .filter(|t| !is_rule(t))
                    .map(str::to_string)
            })
            .skip_while(|t| empty(t))
            .collect();
        while dialog.last().is_some_and(|t| empty(t)) {
            dialog.pop();
        }
        Some(Decision {
            state: State::Question,
            rule,
            region,
            evidence: Some(evidence),
            dialog,
            input_box: false,
            box_text: BoxText::Empty,
        })
    }

    /// The input box: a closing rule within the footer's reach of the bottom,
    /// the nearest rule above it, and a prompt line right under that one. A
    /// dialog's own rule has no prompt line under it, so a dialog is never
    /// mistaken for the box.
    pub(crate) fn find_input_box(&mut self) -> Option<InputBox> {
        let (box_top, box_bottom, prompt) = match &self.profile {
            Profile {
                box_top: Some(t),
                box_bottom: Some(b),
                prompt: Some(p),
                ..
            } => (t, b, p),
            _ => return None,
        };
        let bottom = (0..FOOTER_MAX_LINES)
            .find(|&i| self.tail.text(i).is_some_and(|t| box_bottom.is_match(t)))?;
        let top = (bottom + 1..bottom + 1 + BOX_MAX_LINES)
            .map_while(|i| self.tail.text(i).map(|t| (i, box_top.is_match(t))))
            .find_map(|(i, is_top)| is_top.then_some(i))?;
        let first = self.tail.text(top - 1)?;
        let is_prompt = prompt.is_match(first) && !matches_opt(&self.profile.dialog_cursor, first);
        is_prompt.then_some(InputBox { bottom, top })
    }

    /// The spinner row: the first column-zero line above the box, past blank
    /// lines and indented ones (a `⎿  Tip:`, a task list). Never further up:
    /// that is scrollback.
    fn live_row(&mut self, input: InputBox) -> Option<(Rule, usize)> {
        let profile = self.profile;
        let mut read = 0;
        // Blank rows are not counted, but the walk is still bounded by the
        // tail (a scrollback of blank lines costs this much, not its length).
        for i in input.top + 1..input.top + 1 + BOX_MAX_LINES {
            let line = self.tail.get(i)?;
            // `live_skip`: chrome between the live row and the box (Gemini's rule and mode line).
            // Skipped rows are not counted: Claude Code 2.1.332 pins its box to the bottom of a
            // full-screen frame, so many blank rows can part it from the transcript's last line.
            if line.is_blank() || matches_opt(&profile.live_skip, &line.text) {
                continue;
            }
            read += 1;
            if read > LIVE_ROWS_MAX_LINES {
                return None;
            }
            let line_indented = line.is_indented();
            // A spinner regex anchored at column zero (Claude Code's) never
            // matches an indented line; Gemini CLI's spinner row is indented.
            let markers = [
                (Rule::Spinner, Field::Spinner),
                (Rule::BackgroundWork, Field::Background),
            ];
            let found = self.live_marker(i, &markers).map(|rule| (rule, i));
            // Past indented lines (a tip, a task list) to the first column-zero one, never further.
            if found.is_some() || !line_indented {
                return found;
            }
        }
        None
    }

    /// While a reply streams the spinner row can vanish, leaving `esc to
    /// interrupt` in the status bar as the only live sign; a typed draft
    /// blanks the status bar too. Then the transcript itself tells: every
    /// turn end leaves a line under the reply (`✻ Worked for 3s`,
    /// `⎿  Interrupted`), so a transcript that ends in reply text is a turn
    /// still streaming. Read only when a draft is present, so an idle pane
    /// with an empty box never gets here.
    fn reply_under_draft(&mut self, input: InputBox, typed: &BoxText) -> Option<usize> {
        if typed.is_empty() {
            return None;
        }
        self.unterminated_reply(input)
    }

    /// What the live box holds: its lines from the prompt line down to the
    /// closing rule, after the prompt marker.
    pub(crate) fn box_text(&mut self, input: InputBox) -> BoxText {
        let prompt = self.profile.prompt.as_ref();
        let Some(first) = self.tail.text(input.top - 1) else {
            return BoxText::Empty;
        };
        let marker = prompt
            .and_then(|p| p.find(first))
            .map_or(0, |m| first[..m.end()].chars().count());
        let lines = (input.bottom + 1..input.top)
            .rev()
            .map(|i| (i, if i == input.top - 1 { marker } else { 0 }));
        let lines: Vec<(usize, usize)> = lines.collect();
        self.typed_text(&lines, Some(input.top))
    }

    /// What was typed on the lines `(index, characters of prompt marker to
    /// skip)`, top to bottom, the ink read from line `ink_from` on (tmux
    /// carries attributes from line to line): nothing, the CLI's own
    /// placeholder, our own unsent text, or someone's draft. A line is the
    /// CLI's own when it is drawn faint (a CLI draws its own cursor in
    /// reverse video over the placeholder's first letter), or when its text
    /// is the profile's `placeholder` (its leading blanks kept: Gemini's
    /// placeholder starts with two) and its ink does not say otherwise (a
    /// profile whose `placeholder_ink` is `faint` draws no placeholder in
    /// ordinary ink, so such text there was typed).
    fn typed_text(&mut self, lines: &[(usize, usize)], ink_from: Option<usize>) -> BoxText {
        let mut ink = Ink::default();
        if let Some(line) = ink_from.and_then(|i| self.tail.get(i)) {
            ink::cells(line.raw, &mut ink);
        }
        let faint_only = self.profile.placeholder_ink.as_deref() == Some("faint");
        let mut texts = Vec::new();
        let mut placeholder_seen = false;
        for &(i, skip) in lines {
            let Some(line) = self.tail.get(i) else { break };
            let inked = ink::has_sgr(line.raw);
            let cells = ink::cells(line.raw, &mut ink);
            let typed = cells.get(skip..).unwrap_or_default();
            let text: String = typed.iter().map(|(c, _)| *c).collect();
            let text = text.trim_end();
            if text.trim().is_empty() {
                continue;
            }
            let shown = || typed.iter().filter(|(c, _)| !c.is_whitespace());
            let faint = shown().any(|(_, ink)| ink.faint)
                && shown().all(|(_, ink)| ink.faint || ink.reverse);
            let said =
                matches_opt(&self.profile.placeholder, text) && !(faint_only && inked && !faint);
            if (inked && faint) || said {
                placeholder_seen = true;
                continue;
            }
            texts.push(text.trim().to_string());
        }
        if texts.is_empty() {
            return match placeholder_seen {
                true => BoxText::Placeholder,
                false => BoxText::Empty,
            };
        }
        if self.echo.is_all_ours(&texts.join(" ")) {
            return BoxText::OwnText;
        }
        BoxText::Draft(texts.join("\n"))
    }

    /// What the box of a CLI with no top rule holds (OpenCode): the run of
    /// `box_line` lines right above its bottom edge `edge`, each read after
    /// its bar; and the index of the box's top line.
    fn edge_box_text(&mut self, edge: usize) -> (BoxText, usize) {
        let Some(bar) = self.profile.box_line.as_ref() else {
            return (BoxText::Empty, edge);
        };
        let mut lines = Vec::new();
        for i in edge + 1..edge + 1 + BOX_MAX_LINES {
            let Some(text) = self.tail.text(i) else { break };
            let Some(found) = bar.find(text) else { break };
            lines.push((i, text[..found.end()].chars().count()));
        }
        lines.reverse();
        let top = lines.first().map_or(edge, |&(i, _)| i);
        (
            self.typed_text(&lines, lines.first().map(|&(i, _)| i + 1)),
            top,
        )
    }

    /// The CLI's own words that a usage limit stopped it, in force now: a
    /// line matching the profile's `usage_limit` in the status bar under the
    /// box, or among the newest lines above it with no turn-end line under it
    /// (Claude Code leaves its limit lines in the transcript after it
    /// continued: a finished turn under them means the limit has passed).
    /// Without a box, the bottom lines. Our own echo is older than our
    /// nudge: nothing above it counts. Of the lines found, one whose reset
    /// names its time zone is preferred (`resets 1am (Asia/Tbilisi)` over
    /// the footer's bare `1am`), else the nearest to the box.
    pub(crate) fn usage_limit(&mut self) -> Option<UsageLimit> {
        if self.profile.usage_limit.is_empty() {
            return None;
        }
        let (above, footer) = match self.find_input_box() {
            Some(input) => (input.top + 1, 0..input.bottom),
            None => (0, 0..0),
        };
        let mut found = Vec::new();
        let mut read = 0;
        for i in above.. {
            let Some(line) = self.tail.get(i) else { break };
            if line.is_blank() {
                continue;
            }
            read += 1;
            if read > LIMIT_MAX_LINES || self.echo.matches(&line.text) {
                break;
            }
            let turn_end = matches_opt(&self.profile.turn_end, &line.text);
            match self.limit_line(i) {
                Some(limit) => found.push(limit),
                None if turn_end => break,
                None => {}
            }
        }
        for i in footer {
            found.extend(self.limit_line(i));
        }
        let zoned = found
            .iter()
            .position(|limit| limit.reset.as_deref().is_some_and(|r| r.contains('(')));
        let chosen = zoned.unwrap_or(0);
        (chosen < found.len()).then(|| found.swap_remove(chosen))
    }

    /// Line `i` as a usage-limit line, unless it is our own echo; a line
    /// the pane wrapped is read with up to two lines under it (Codex's
    /// `… or try again` / `at 2:35 AM.`).
    fn limit_line(&mut self, i: usize) -> Option<UsageLimit> {
        let first = self.tail.text(i)?;
        // A line no pattern matches alone starts no limit (one test for most lines).
        let starts = self
            .profile
            .usage_limit_any
            .as_ref()
            .is_some_and(|any| any.is_match(first));
        if !starts || self.echo.matches(first) {
            return None;
        }
        // The line, then with one and two lines under it joined on, each
        // regex tried on every length before the next (the profile's order).
        let mut joined = vec![first.to_string()];
        for below in (i.saturating_sub(LIMIT_WRAPPED_LINES)..i).rev() {
            let Some(next) = self.tail.text(below).filter(|t| !t.trim().is_empty()) else {
                break;
            };
            let longer = format!("{} {}", joined[joined.len() - 1], next.trim());
            joined.push(longer);
        }
        self.profile.usage_limit.iter().find_map(|regex| {
            joined.iter().find_map(|text| {
                let captures = regex.captures(text)?;
                let reset = captures
                    .name("reset")
                    .map(|m| m.as_str().trim().to_string())
                    .filter(|r| !r.is_empty());
                Some(UsageLimit {
                    line: text.clone(),
                    reset,
                })
            })
        })
    }

    /// The newest reply above the input box when nothing ended it: walking
    /// up past blank lines, the CLI's own notices (`notice`) and the reply's
    /// indented continuation, the first
    /// column-zero line is a reply (`reply`), and no turn-end line
    /// (`turn_end`), tool output or task line (`detail`, `task_*`) came first.
    fn unterminated_reply(&mut self, input: InputBox) -> Option<usize> {
        let profile = self.profile;
        let reply = profile.reply.as_ref()?;
        let mut newest = None;
        let mut top_is_text = false;
        for i in input.top + 1..input.top + 1 + TRANSCRIPT_BLOCK_MAX_LINES {
            let Some(line) = self.tail.get(i) else {
                // The top of the pane, inside a reply whose first line has
                // scrolled away: a reply taller than the pane, still open.
                // Its text then runs to the very first row; a banner with
                // blank rows above it (a welcome screen) does not.
                return newest.filter(|_| top_is_text);
            };
            top_is_text = !line.is_blank();
            if line.is_blank() {
                continue;
            }
            let text = &*line.text;
            if self.echo.matches(text) || matches_opt(&profile.turn_end, text) {
                return None;
            }
            // The CLI's own notice is not the reply: read on above it.
            if matches_opt(&profile.notice, text) {
                continue;
            }
            newest.get_or_insert(i);
            if line.is_indented() {
                let detail = [
                    &profile.detail,
                    &profile.task_done,
                    &profile.task_active,
                    &profile.task_open,
                ];
                if detail.iter().any(|field| matches_opt(field, text)) {
                    return None;
                }
                continue;
            }
            return reply.is_match(text).then_some(newest.unwrap_or(i));
        }
        None
    }

    /// A CLI with no input box (the profile has `input_line`, e.g. Aider's
    /// `>`) prints its input line as the LAST line whenever it waits, and asks
    /// its yes/no questions inline on that same last line (`inline_question`).
    /// So the bottom line decides: the input line is a stop, an inline question
    /// is a question, and anything else is a turn still printing. Questions
    /// answered further up are scrollback and never read. Profiles without
    /// `input_line` return `None` here and keep the dialog rules.
    fn inline_input(&mut self, work: Work) -> Option<Decision> {
        let profile = self.profile;
        let input_line = profile.input_line.as_ref()?;
        let (is_input, is_question) = {
            let text = self.tail.text(0)?;
            let asked = matches_opt(&profile.inline_question, text) && !self.echo.matches(text);
            (input_line.is_match(text), asked)
        };
        if is_input {
            let region = self.region(RegionKind::InputBox, 0, 0);
            let marker = self
                .tail
                .text(0)
                .and_then(|t| input_line.find(t).map(|m| t[..m.end()].chars().count()))
                .unwrap_or(0);
            return Some(Decision {
                input_box: true,
                box_text: self.typed_text(&[(0, marker)], None),
                ..self.stop(work, region, Some(0))
            });
        }
        if is_question {
            // The question and the line above it (what it is about: a file, a command).
            let above = self.tail.get(1).filter(|line| !line.is_blank()).is_some();
            let top = usize::from(above);
            let dialog = (0..=top)
                .rev()
                .filter_map(|i| self.tail.text(i).map(str::to_string))
                .collect();
            return Some(Decision {
                state: State::Question,
                rule: Rule::InlineQuestion,
                region: self.region(RegionKind::Bottom, 0, top),
                evidence: Some(0),
                dialog,
                input_box: false,
                box_text: BoxText::Empty,
            });
        }
        let region = self.region(RegionKind::Bottom, 0, 0);
        Some(self.working(Rule::NoInputLine, region, 0))
    }

    /// A CLI that hides its status row while a reply streams (Codex) but
    /// leaves a turn-end line under every finished turn (`turn_end`: `Worked
    /// for 3s`, `■ Conversation interrupted`): a transcript whose newest
    /// column-zero line above the box is a reply, with no turn-end line
    /// below it, is a turn still streaming. Profiles without `turn_end`
    /// never get here.
    fn reply_without_turn_end(&mut self, input: InputBox) -> Option<usize> {
        self.profile.turn_end.as_ref()?;
        self.unterminated_reply(input)
    }

    /// The profile's `stop_note` for a stopped pane: the text of the first
    /// pair whose regex matches a line of the live chrome, echo excluded.
    /// The live chrome is the status bar under the input box and the rows
    /// above it up to the first column-zero line (where `live_row` reads the
    /// spinner), or, without a box, the bottom lines.
    fn stop_note(&mut self) -> Option<String> {
        let profile = self.profile;
        if profile.stop_note.is_empty() {
            return None;
        }
        let mut chrome = Vec::new();
        match self.find_input_box() {
            Some(input) => {
                chrome.extend(0..input.bottom);
                for i in input.top + 1..input.top + 1 + LIVE_ROWS_MAX_LINES {
                    let Some(line) = self.tail.get(i) else { break };
                    let column_zero = !line.is_blank() && !line.is_indented();
                    chrome.push(i);
                    if column_zero && !matches_opt(&profile.live_skip, &line.text) {
                        break;
                    }
                }
            }
            None => chrome.extend(0..BOXLESS_CHROME_LINES),
        }
        for i in chrome {
            let Some(text) = self.tail.text(i) else {
                continue;
            };
            if self.echo.matches(text) {
                continue;
            }
            if let Some((_, note)) = profile.stop_note.iter().find(|(r, _)| r.is_match(text)) {
                return Some(note.clone());
            }
        }
        None
    }

    /// The first rule whose marker matches line `i`, unless the line is our own echo.
    fn live_marker(&mut self, i: usize, markers: &[(Rule, Field)]) -> Option<Rule> {
        let profile = self.profile;
        let text = self.tail.text(i)?;
        if self.echo.matches(text) {
            return None;
        }
        markers
            .iter()
            .find(|(_, field)| matches_opt(field.of(profile), text))
            .map(|(rule, _)| *rule)
    }

    /// The index of a dialog's first line: the nearest rule line above the
    /// bottom, or a rule further up when the part below the nearest one asks
    /// nothing (AskUserQuestion draws a rule between its options and `Chat
    /// about this`, so its question sits above the second rule).
    fn dialog_top(&mut self) -> usize {
        let top = match self.dialog_block() {
            Some(top) => top,
            None => self.dialog_top_by_rules(),
        };
        self.dialog_start_above(top).unwrap_or(top)
    }

    /// A dialog drawn as one block of `dialog_line` lines (OpenCode's `┃`
    /// bar) ending at the bottom, past blank bottom rows: its top line. The
    /// transcript above it (a user message has the same bar) is apart from
    /// it by a line without the bar.
    fn dialog_block(&mut self) -> Option<usize> {
        let block = self.profile.dialog_line.as_ref()?;
        let mut top = None;
        for i in 0..DIALOG_MAX_LINES {
            let Some(line) = self.tail.get(i) else { break };
            if top.is_none() && line.is_blank() {
                continue;
            }
            if !block.is_match(&line.text) {
                break;
            }
            top = Some(i);
        }
        top
    }

    /// A CLI that draws its question apart from its options (Codex): the
    /// `dialog_start` line above `top`, past blank and indented lines only
    /// (a column-zero line is the transcript, where the search ends).
    fn dialog_start_above(&mut self, top: usize) -> Option<usize> {
        let start = self.profile.dialog_start.as_ref()?;
        for i in top + 1..DIALOG_MAX_LINES {
            let line = self.tail.get(i)?;
            if start.is_match(&line.text) {
                return Some(i);
            }
            if !line.is_blank() && !line.is_indented() {
                return None;
            }
        }
        None
    }

    /// The nearest rule line above the bottom, or a rule further up when the
    /// part below the nearest one asks nothing.
    fn dialog_top_by_rules(&mut self) -> usize {
        let profile = self.profile;
        let is_rule =
            |t: &str| matches_opt(&profile.box_top, t) || matches_opt(&profile.box_bottom, t);
        let mut top = 0;
        let mut asked = false;
        let mut rules_crossed = 0;
        for i in 1..DIALOG_MAX_LINES {
            let Some(text) = self.tail.text(i) else { break };
            top = i;
            if is_rule(text) {
                rules_crossed += 1;
                if asked || rules_crossed == DIALOG_MAX_RULES {
                    break;
                }
            } else if text.ends_with('?') || matches_opt(&profile.dialog_question, text) {
                asked = true;
            }
        }
        top
    }

    /// A question, by structure, in the dialog lines `0..=top`, echo excluded.
    fn question(&mut self, top: usize) -> Option<(Rule, usize)> {
        let profile = self.profile;
        let mut hint = None;
        let mut question = None;
        let mut cursor = None;
        let mut options = 0;
        let mut first_option = None;
        for i in 0..=top {
            let Some(text) = self.tail.text(i) else { break };
            if self.echo.matches(text) {
                continue;
            }
            let seen = |slot: &mut Option<usize>, field: &Option<Regex>| {
                if slot.is_none() && matches_opt(field, text) {
                    *slot = Some(i);
                }
            };
            // A live selection hint is the dialog's last line or next to it;
            // higher up it is prose about one (a reply quoting the keys).
            if i < HINT_MAX_FROM_BOTTOM {
                seen(&mut hint, &profile.question_hint);
            }
            seen(&mut question, &profile.dialog_question);
            seen(&mut cursor, &profile.dialog_cursor);
            if matches_opt(&profile.dialog_option, text) {
                options += 1;
                first_option = Some(i);
            }
        }
        if let Some(i) = hint {
            return Some((Rule::SelectHint, i));
        }
        let choices = cursor.is_some() && options >= 2;
        if let (true, Some(i)) = (choices, question) {
            return Some((Rule::PermissionDialog, i));
        }
        if choices {
            // A selection cursor over numbered options where the input box
            // should be: a menu that waits for a human (plan approval, a
            // startup picker). The question is the nearest `?` line above.
            let above = first_option.unwrap_or(0);
            let asked =
                (above..=top).find(|&i| self.tail.text(i).is_some_and(|t| t.ends_with('?')));
            return Some((Rule::ChoiceDialog, asked.or(cursor).unwrap_or(above)));
        }
        None
    }

    fn working(&self, rule: Rule, region: Region, evidence: usize) -> Decision {
        Decision {
            state: State::Working,
            rule,
            region,
            evidence: Some(evidence),
            dialog: Vec::new(),
            input_box: false,
            box_text: BoxText::Empty,
        }
    }

    fn stop(&self, work: Work, region: Region, evidence: Option<usize>) -> Decision {
        let (state, rule) = work.stop();
        Decision {
            state,
            rule,
            region,
            evidence,
            dialog: Vec::new(),
            input_box: false,
            box_text: BoxText::Empty,
        }
    }

    /// A region from tail index `low` (lower on screen) to `high` (higher).
    fn region(&mut self, kind: RegionKind, low: usize, high: usize) -> Region {
        let first = self.offset_at_or_below(high);
        let last = self.offset_at_or_below(low);
        Region { kind, first, last }
    }

    fn offset_at_or_below(&mut self, i: usize) -> usize {
        (0..=i)
            .rev()
            .find_map(|j| self.tail.get(j).map(|line| line.offset))
            .unwrap_or(0)
    }

    fn evidence(&mut self, i: usize) -> Option<Evidence> {
        let line = self.tail.get(i)?;
        Some(Evidence {
            offset: line.offset,
            text: line.text.to_string(),
        })
    }
}

#[derive(Clone, Copy)]
enum Field {
    Spinner,
    Busy,
    Background,
}

impl Field {
    fn of(self, profile: &Profile) -> &Option<Regex> {
        match self {
            Field::Spinner => &profile.spinner,
            Field::Busy => &profile.busy,
            Field::Background => &profile.background,
        }
    }
}

pub(crate) fn matches_opt(regex: &Option<Regex>, text: &str) -> bool {
    regex.as_ref().is_some_and(|r| r.is_match(text))
}

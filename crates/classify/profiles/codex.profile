# Codex CLI (npm @openai/codex), as observed on 0.171.0 in tmux (testdata/panes/codex/ holds the captures).
# Format: see claude.profile. Lines are matched after normalisation: escapes stripped, trailing blanks trimmed.
# `stop_note = REGEX => TEXT`: on a stop, a live-chrome line matching REGEX gives the verdict the note TEXT.
name = codex
agent = Codex CLI
versions = 0.171.x

# Auto-detection: lines near the bottom that only this CLI prints. `›` is U+203A (Claude Code's is ❯).
detect = ^›\s
detect = ← for agents · \? for shortcuts
detect = ^\s*\? for shortcuts$
detect = f2 to view$
detect = OpenAI Codex \(v\d
detect = ^[•◦]\s+Working \(
detect = ^\s*Worked for \S
detect = Press enter to confirm or esc to cancel
detect = ^\s*Would you like to (?:run the following command|make the following edits)\?
detect = ^\s*(?:›\s*)?\d+\.\s+(?:Yes, proceed \(y\)|Yes, and don't ask again|No, and tell Codex what to do differently|Trust and continue)
detect = enter continue · esc back
detect = ^\s*Trust this folder\?
# request_user_input (Plan mode): `Question 1/3 (3 unanswered)` over the options, hint
# `tab to add notes | enter to submit answer | …`; the plan prompt `Implement this plan?`.
detect = enter to submit answer
detect = ^\s*Question \d+/\d+ \(\d+ unanswered\)
detect = ^\s*(?:›\s*)?\d+\.\s+(?:None of the above\s+Optionally, add details|Yes, implement this plan|No, stay in Plan mode)
detect = Plan mode \(shift\+tab to cycle\)

# The composer has no border: a blank padding row, the `›` line(s), a blank padding row, then the
# footer (`model · cwd · title` and `← for agents · ? for shortcuts`). A dialog's cursor `› 1.` is
# excluded by dialog_cursor, so a dialog is never taken for the composer.
box_top = ^$
box_bottom = ^$
prompt = ^›\s
# The empty composer shows a suggestion in faint ink (`› Ask Codex to do anything`, and others);
# without ink (`capture-pane -p`) only this one is known as text. Anything else there is a draft.
placeholder = ^Ask (?:Codex to do anything|a follow-up question)$
# Its placeholders are faint: where the capture carries ink, ordinary text there was typed,
# even a person's exact copy of a placeholder's words (it stays faint under NO_COLOR). The
# terminal cursor is real and visible, at x=2 on the placeholder and on a draft moved to its start:
# it does not tell.
placeholder_ink = faint

# Live chrome: the status row just above the composer, `• Working (6s • esc to interrupt)`, optionally
# followed by ` · 1 background terminal running · /ps to view · /stop to close` (working-exec-running):
# the spinner reads that row whole, so the background terminal beside it is WORKING.
spinner = ^[•◦]\s+\S.*\(\d[^)]*esc to interrupt\)
busy = \(\d[^)]*esc to interrupt\)
# No `background` key, on purpose. After a finished turn (`Worked for …`) the same words stand alone,
# indented, above the composer: `  1 background terminal running · /ps to view · /stop to close`
# (idle-background-terminal). Codex starts no turn when that terminal exits (openai/codex#33712), so
# only a nudge wakes the agent: it is a stop (STALLED or BLOCKED by the work probe), and the nudge
# should say to look at the terminal. (Claude Code starts a turn when a background task ends, so
# claude.profile's `background` keeps its `N shells still running` WORKING.)
stop_note = ^\s*[1-9]\d* background terminals? running(?: · |$) => a background terminal is still running: check it with /ps

# While a reply streams, 0.171.0 shows NO status row at all (working-streaming-text): the transcript
# ends in a `•` reply. Every finished turn leaves `Worked for <1s • 01:02` under it (or `■ …` when
# interrupted or failed), so a reply with no turn-end line under it is still streaming.
reply = ^•\s
turn_end = ^\s*Worked for(?-u:\b)
turn_end = ^■\s
# A notice Codex prints between turns, not a reply: `/plan` leaves `• Model changed to gpt-5-codex
# medium for Plan mode.` at column zero (idle-plan-mode). No turn streams under it.
turn_end = ^•\s+Model changed to\s
detail = ^\s*└\s

# Dialogs replace the composer and the footer: a question, numbered options with a `›` cursor,
# and a last line `Press enter to confirm or esc to cancel` (startup trust: `enter continue · esc back`).
dialog_question = ^\s*Would you like to .+\?\s*$
dialog_question = ^\s*Trust this folder\?
dialog_option = ^\s*(?:›\s*)?\d+\.\s+\S
dialog_cursor = ^\s*›\s*\d+\.\s+\S
# The question stands apart from the options, over blank rows (exec approval: the question,
# `Environment:`, `Reason:`, `$ command`; patch approval: `Description:`, `Destination:`;
# request_user_input: `Question 1/1 (1 unanswered)` and the question; the plan prompt): the dialog
# runs from this line down, so the relay carries the question and its command, not only the options.
dialog_start = ^\s*Would you like to .+\?\s*$
dialog_start = ^\s*Question \d+/\d+ \(\d+ unanswered\)$
dialog_start = ^\s*Implement this plan\?$
dialog_start = ^\s*Trust this folder\?

# Usage limits: `■ You've hit your usage limit. Upgrade to Pro (…) or try again at 2:51 PM.` or
# `… or try again in 2 days 17 hours 14 minutes.` The stop is held until the reset.
usage_limit = ^■ You['’]ve hit your usage limit(?: for \S+)?\..*try again (?P<reset>(?:at|in) .+?)\.?\s*$
# `… or try again later.` (no time in the error's body): a limit whose reset cannot be read.
usage_limit = ^■ You['’]ve hit your usage limit(?-u:\b)

# Claude Code, as observed on 2.1.x in tmux (testdata/panes/claude/ holds the captures).
# Format: `key = value`, one per line; regex keys may repeat (the values are alternatives).
# One key is a regex and a text: `stop_note = REGEX => TEXT` never changes a state; on a stop whose live
# chrome has a line matching REGEX, the verdict's note (what the nudge should add) is TEXT (see codex.profile).
# Lines are matched after normalisation: escapes stripped, trailing blanks trimmed.
name = claude
agent = Claude Code
versions = 2.1.x

# Auto-detection: lines near the bottom that only this CLI prints.
detect = \? for shortcuts
detect = ← for agents
detect = esc to interrupt
detect = ^─{8,}$
detect = ^❯(?:\s|$)
detect = Claude Code v\d
detect = \(shift\+tab to cycle\)

# The input box: a rule line, the ❯ line (❯ then a no-break space while live), a closing rule line.
box_top = ^─{8,}$
box_bottom = ^─{8,}$
prompt = ^[❯>](?:\s|$)

# Live chrome. The spinner row sits at column zero just above the box: a glyph, a gerund ending
# in `…`, and optionally a parenthesis that starts with the elapsed time, `esc to interrupt` or tokens.
# A finished turn leaves `✻ Worked for 1m 0s`: same glyph family, but no `…`.
spinner = ^[·✢✳✶✻✽*]\s+\S[^…]*…\s*(?:\(.*\)\s*)?$
# The footer (below the box) while a turn renders; the spinner row can vanish while text streams.
busy = esc to interrupt
# Background work is not a stop.
background = (?-u:\b)[1-9]\d* (?:background )?(?:shells?|bash(?:es)?|tasks?|agents?) still running(?-u:\b)
background = ^[·✢✳✶✻✽*]\s+Waiting for [1-9]\d* background (?:agents?|tasks?|shells?) to finish
background = ·\s+[1-9]\d* (?:background )?shells?\s*(?:·|$)

# The transcript: a reply starts at column zero with ● (⏺ before 2.1.x); tool output and
# status lines inside it hang under ⎿. Every turn end leaves a line under the reply.
reply = ^[●⏺]\s
detail = ^\s*⎿

# Questions, by structure. The selection hint carries both markers on one line (seed rule).
question_hint = Enter to select.*to navigate
# Dialogs replace the input box: a question line, numbered options with a ❯ cursor.
dialog_question = ^\s*(?:Do you want to .+\?|Would you like to .+\?|Ready to submit your answers\?)\s*$
dialog_option = ^\s*(?:❯\s*)?\d+\.\s+\S
dialog_cursor = ^\s*❯\s*\d+\.\s+\S

# Task lists (TodoWrite): completed items are dropped before transitions are read (seed defect 6).
task_done = ^\s*(?:⎿\s+)?[☒✔✓]\s+\S
# In progress (2.1.x draws ◼), and open but not started (◻; ☐ before 2.1.x).
task_active = ^\s*(?:⎿\s+)?[◼■▶]\s+\S
task_open = ^\s*(?:⎿\s+)?[☐◻□]\s+\S

# Claude Code, as observed on 2.1.197 and 2.1.332 in tmux (testdata/panes/claude/ holds the captures).
# Format: `key = value`, one per line; regex keys may repeat (the values are alternatives).
# One key is a regex and a text: `stop_note = REGEX => TEXT` never changes a state; on a stop whose live
# chrome has a line matching REGEX, the verdict's note (what the nudge should add) is TEXT (see codex.profile).
# A nudge is typed only where the live input box is recognised: by box_top/prompt/box_bottom (here),
# input_line (a CLI with no box, Aider) or input_edge (a box with no top rule, OpenCode).
# Lines are matched after normalisation: escapes stripped, trailing blanks trimmed.
name = claude
agent = Claude Code
versions = 2.1.197, 2.1.332

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
# 2.1.332 writes placeholder text into an empty box (after an API error, under a queued message),
# in faint ink with its own cursor cell over the first letter; in a capture without ink (`-p`) the
# text itself tells it from a person's draft. A draft is never typed over; a placeholder is no draft.
placeholder = ^(?:Resend your message to try again|Once fixed, resend your message|Run /rewind to go back|Taking your message back…)$
# Its placeholders are faint: where the capture carries ink, ordinary text there was typed,
# even a person's exact copy of a placeholder's words. (Under NO_COLOR nothing is faint: a
# placeholder there reads as a draft, never typed over.) The terminal cursor does not tell: 2.1.332
# hides it and parks it on its own drawn cursor cell, at x=2 both for a placeholder and for a draft
# whose cursor was moved to its start.
placeholder_ink = faint
# The queue's hints (`Press up to edit queued messages`, `… Enter to send them now`, …).
placeholder = ^Press (?:up|Enter) to (?:edit|select) (?:the |a )?(?:queued|selected) messages?(?:,? .*)?$
# A welcome screen's suggestion (faint with ink): `❯ Try "edit mcp.rs to..."`.
placeholder = ^Try "[^"]*"$

# Live chrome. The spinner row sits at column zero just above the box: a glyph, a gerund ending
# in `…`, and optionally a parenthesis that starts with the elapsed time, `esc to interrupt` or tokens.
# A finished turn leaves `✻ Worked for 1m 0s`: same glyph family, but no `…`.
spinner = ^[·✢✳✶✻✽*]\s+\S[^…]*…\s*(?:\(.*\)\s*)?$
# A retried request is a turn in progress too: `✻ API error · retrying in 1s · attempt 1/10`
# (2.1.197: `Retrying`). It has no `…`, and a draft in the box hides the footer's `esc to interrupt`.
spinner = ^[·✢✳✶✻✽*]\s+API error · [Rr]etrying in \d+\s*s · attempt \d+/\d+
# The footer (below the box) while a turn renders; the spinner row can vanish while text streams.
busy = esc to interrupt
# Background work is not a stop.
background = (?-u:\b)[1-9]\d* (?:background )?(?:shells?|bash(?:es)?|tasks?|agents?) still running(?-u:\b)
background = ^[·✢✳✶✻✽*]\s+Waiting for [1-9]\d* background (?:agents?|tasks?|shells?) to finish
background = ·\s+[1-9]\d* (?:background )?shells?\s*(?:·|$)

# The transcript: a reply starts at column zero with ● (⏺ before 2.1.x); tool output and
# status lines inside it hang under ⎿. Every turn end leaves a line under the reply.
reply = ^[●⏺]\s
# A finished turn's line (`✻ Crunched for 1m 0s`, `✻ Sautéed for 0s · done 9:08 AM`); an Esc or a
# rejected tool leaves `⎿  Interrupted` (a `detail`). With it, a transcript whose newest column-zero
# line above the box is a reply with nothing of these under it is a reply still streaming: in vim
# editor mode the footer never says `esc to interrupt` (`-- INSERT --` instead), and the spinner row
# can vanish while text streams, so nothing else on screen says so.
turn_end = ^[·✢✳✶✻✽*]\s+\S+ for \d+[hms]
# A turn that ends on an API error leaves the error as its last reply (`● API Error: 529 Overloaded. …`).
turn_end = ^●\s+API Error: 
# Not replies: 2.1.332's auto-mode notice, which it also prints under a finished turn once the user
# types into the box (so a draft under it is no reply still streaming).
notice = ^●\s+Auto mode lets Claude handle permission prompts automatically
# Its usage-limit machinery's own lines (2.1.332, testdata/panes/claude/usage-limit-*): no reply.
notice = ^●\s+(?:Usage limit (?:reached|reset|has reset|available again)(?: again)? · |Automatic continue (?:cancelled|stopped|was turned off)(?-u:\b))
detail = ^\s*⎿

# Questions, by structure. The selection hint carries both markers on one line (seed rule).
question_hint = Enter to select.*to navigate
# 2.1.332's auto mode, when its safety check cannot reach its server, puts a dialog of its own where
# the box was: no options, its last line a row of keys (`Enter to stay in auto mode · shift+Tab to
# leave for accept edits mode and stop · Esc to cancel`, wrapped in two at 80 columns).
question_hint = ^\s*Enter to stay in auto mode · 
# Claude Code's own notices where the box was (`/feedback`'s `Enter to continue · Esc to cancel`): no
# options, a key row last. Only a row that STARTS with `Enter to continue` is one: the footer under a
# live box can end in `Esc to cancel` too (`Continuing automatically at 1am · Esc to cancel`), and prose
# is never read here (with a box on screen only the lines under it are, without one only the bottom few).
question_hint = ^\s*Enter to continue(?: · .+)?$
# Dialogs replace the input box: a question line, numbered options with a ❯ cursor.
dialog_question = ^\s*(?:Do you want to .+\?|Would you like to .+\?|Ready to submit your answers\?)\s*$
# The cursor is `❯` and ordinary spaces; `❯` and a NO-BREAK SPACE is the live box, so a draft
# that starts with a numbered item (`❯ 1. add a golden`) is never taken for a dialog.
dialog_option = ^\s*(?:❯ *)?\d+\.\s+\S
dialog_cursor = ^\s*❯ *\d+\.\s+\S
# 2.1.332 draws some options unnumbered: `❯ No` / `Yes` (auto mode's permission dialog, the API key
# and trust dialogs) and the theme picker's `❯ ✔ Auto (match terminal)` / `Dark mode`. A dialog's
# cursor is ❯ and an ORDINARY space; a live input box has ❯ and a no-break space, so a typed `No`
# is never a cursor.
dialog_option = ^\s*(?:❯ +)?(?:Yes|No)(?:[ ,].*)?$
dialog_option = ^\s*(?:❯ +)?(?:✔ +)?(?:Auto \(match terminal\)|(?:Dark|Light) mode(?: \(.+\))?)$
dialog_cursor = ^\s*❯ +(?:✔ +)?(?:Yes|No|Auto \(match terminal\)|(?:Dark|Light) mode)(?:[ ,].*)?$

# Task lists (TodoWrite): completed items are dropped before transitions are read (seed defect 6).
task_done = ^\s*(?:⎿\s+)?[☒✔✓]\s+\S
# In progress (2.1.x draws ◼), and open but not started (◻; ☐ before 2.1.x).
task_active = ^\s*(?:⎿\s+)?[◼■▶]\s+\S
task_open = ^\s*(?:⎿\s+)?[☐◻□]\s+\S

# Usage limits (users' reports and 2.1.332's own limit screen, logged in with OAuth): the stop keeps
# its word and is held until the reset the `reset` group cuts out, read in the zone it names (else
# the local one). The transcript line names the zone; the footer's time is the CLI's local time.
usage_limit = ^\s*(?:⎿\s+)?You['’]ve hit your (?:[\w-]+ )?limit · resets (?P<reset>.+?)\s*$
usage_limit = Usage limit reached · (?:limit )?resets (?P<reset>.+?)\s*$
usage_limit = Usage limit reached · set to continue automatically (?P<reset>at .+?)\s*$
usage_limit = ^\s*Continuing automatically (?P<reset>at .+?) · Esc to cancel\s*$

# Gemini CLI (npm @google/gemini-cli), as observed on 0.61.0 in tmux (testdata/panes/gemini/ holds the captures).
# Format: see claude.profile. Lines are matched after normalisation: escapes stripped, trailing blanks trimmed.
name = gemini
agent = Gemini CLI
versions = 0.61.x

# Auto-detection: lines near the bottom that only this CLI prints.
detect = ^▄{8,}$
detect = ^▀{8,}$
# With NO_COLOR (or `ui.useBackgroundColor: false`) the box's borders and the rule above the mode line are
# `────` rows, as Claude Code's and Aider's are: counted here too, or the tie goes to Claude Code.
detect = ^─{8,}$
detect = ^ [>*!]\s+Type your message
detect = Shift\+Tab to accept edits
detect = YOLO Ctrl\+Y
detect = ^\s*workspace \(/directory\)
detect = (?-u:\b)no sandbox(?-u:\b)
detect = \(esc to cancel, [^)]*\)
detect = Gemini CLI v\d
detect = Warning: True color \(24-bit\) support not detected
detect = ^\s*│\s*●\s*\d+\.\s
detect = ^\s*│\s*\d+\.\s+(?:Allow for this session|No, suggest changes|Modify with external editor|Enter a custom value|Trust parent folder|Don't trust)
detect = (?:Apply this change|Allow execution of .*|Do you trust the files in this folder)\?
detect = ^\s*│\s*Answer Questions

# The input box: its first line is ` > ` (` * ` in YOLO mode, ` ! ` in shell mode) and the typed text,
# then the footer (`workspace (/directory) · branch · sandbox · /model` and values). Its borders depend
# on the terminal (HalfLinePaddedBox in the CLI's source), so each rendering is one alternative:
# - truecolor (`COLORTERM=truecolor`/`24bit`): a `▄▄▄` row above and a `▀▀▀` row below, in the box's
#   background colour (the `-truecolor` captures are the unsuffixed cases);
# - 256 colours (tmux without COLORTERM, the usual pane): a BLANK row above and below, the box drawn as a
#   background colour only (`ESC[48;5;240m`), so in plain text the borders are empty lines (`-256` cases);
# - `NO_COLOR`, or the setting `ui.useBackgroundColor: false`: a `────` rule above and below
#   (`-no-color` and `-no-bg` cases).
# Submitted prompts stay in the history inside the same borders (with NO_COLOR: `> text` between blank
# rows, no border), so only the box at the bottom counts.
box_top = ^▄{8,}$
box_top = ^─{8,}$
box_top = ^$
box_bottom = ^▀{8,}$
box_bottom = ^─{8,}$
box_bottom = ^$
prompt = ^ [>*!]\s
# The empty box: a drawn cursor cell (reverse video) BEFORE the placeholder, in grey or in no
# colour at all (NO_COLOR), so ink does not tell it; the text does. Anything else there is a draft.
# The terminal cursor is hidden, parked on the drawn cell (x=3) for the placeholder and for a draft
# moved to its start alike: it does not tell.
# The text after the prompt marker keeps its leading blanks: the placeholder starts with two
# (` >   Type…`), a person typing the same words has none (` > Type…`).
placeholder = ^ {2}(?:Type your message or @path/to/file|Type your shell command|Press 'Esc' for NORMAL mode\.|Press 'i' for INSERT mode\.|Type your message or (?:hold )?space to talk \(Esc to exit\))$

# Between the spinner row and the box: a `────` rule and the approval-mode line
# (` Shift+Tab to accept edits`, ` YOLO Ctrl+Y`, indented, so skipped anyway).
live_skip = ^─{8,}$
# The spinner row, indented by one space: ` ⠧ Thinking... (esc to cancel, 6s)` with `? for shortcuts`
# right-aligned on the same row. In Gemini CLI `esc to cancel` means BUSY (in Claude Code, a dialog).
spinner = ^\s*[⠀-⣿]\s.*\(esc to cancel, [^)]*\)
# Under 80 columns the spinner row is split: ` ⠏ Thinking...`, then ` (esc to cancel, 8s)` on a row
# of its own (and ` ? for shortcuts` under it).
spinner = ^\s*\(esc to cancel, [^)]*\)\s*$
busy = \(esc to cancel, [^)]*\)

# Questions: dialogs in a rounded box replace the input box. The ask_user tool carries the seed's
# selection hint; tool confirmations ask `Allow execution of [Shell]?` / `Apply this change?` over
# numbered options with a `●` cursor; the startup trust dialog asks `Do you trust the files in this folder?`.
question_hint = Enter to select.*to navigate
dialog_question = ^\s*│?\s*(?:Apply this change|Allow execution of .*|Do you trust the files in this folder|Do you want to proceed)\?
dialog_option = ^\s*│\s*(?:●\s*)?\d+\.\s+\S
dialog_cursor = ^\s*│\s*●\s*\d+\.\s+\S

# OpenCode, as observed on 1.18.x in tmux (testdata/panes/opencode/ holds the captures), and on 1.1.8
# in agent-of-empires' captures (testdata/panes/opencode/peer-aoe-*).
# Format: `key = value`, one per line; regex keys may repeat (the values are alternatives).
# Lines are matched after normalisation: escapes stripped, trailing blanks trimmed.
name = opencode
agent = OpenCode
versions = 1.1.8-1.18.x

# Auto-detection: lines near the bottom that only this CLI prints. The input box is a `┃` bar on
# its left and a `╹▀▀▀…` bottom edge; user messages and dialogs in the transcript use the `┃` bar too.
detect = ^\s*╹▀{8,}$
detect = ^\s*┃(?:\s|$)
detect = ctrl\+p commands$
detect = (?-u:\b)esc interrupt(?-u:\b)
detect = △ Permission required
detect = (?:⇆|↑↓) select\s+enter (?:confirm|submit|toggle)
# The status line at the very bottom of the welcome screen: `  /path/to/proj:branch    1.18.33`.
detect = ^\s+[~/]\S*\s{4,}\d+\.\d+\.\d+$

# No box keys: the box has no top edge (its first line is a bare `┃`, like a user message in the
# transcript), so the engine reads the bottom lines instead: the footer under the box is the bottom
# line while a session runs, and a dialog replaces the box and its footer.

# The live box's bottom edge, `╹▀▀▀…`, near the bottom: a stop with it on screen has a live input
# box to type into (a dialog replaces the box and its edge).
input_edge = ^\s*╹▀{8,}$
# Inside the box: the `┃` bar on the left, what was typed after it. Its last line is the CLI's own
# agent and model (`Build · GPT-4o (mock) Mock`; 1.1.8: `Build  MiniMax M2.1 OpenCode Zen`), and an
# empty box on the home screen shows a grey suggestion (not faint: the text tells), so neither is a
# draft: `Ask anything… "Fix broken tests"` (1.1.8: `...`), shell mode `Run a command… "git status"`.
box_line = ^\s*┃ ?
placeholder = ^\s*(?:Build|Plan)(?: · |\s{2})\S.*$
placeholder = ^\s*(?:Ask anything|Run a command)(?:…|\.\.\.) "[^"]*"$

# Live chrome: the footer while a turn runs, `■■■■⬝⬝⬝⬝  esc interrupt   …  tab agents  ctrl+p commands`
# (the progress bar moves; `esc interrupt`, with no `to`).
busy = (?-u:\b)esc interrupt(?-u:\b)
spinner = (?:■|⬝){4,}\s+esc interrupt

# Questions. Permission dialogs (`△ Permission required`, `Allow once   Allow always   Reject`)
# end in `⇆ select  enter confirm`; the question tool's dialog (OPENCODE_ENABLE_QUESTION_TOOL=1)
# in `↑↓ select  enter submit  esc dismiss` (`enter toggle` on a multiple-choice question).
question_hint = (?:⇆|↑↓)\s*select\s+enter (?:confirm|submit|toggle)
# At 80 columns the permission hint is cut (`⇆ select  enter con`): its option row says it too.
question_hint = ^\s*┃\s+Allow once\s+Allow always\s+Reject(?-u:\b)
dialog_question = △ Permission required
dialog_option = ^\s*┃\s+\d+\.\s+\S
# A dialog is the `┃` block at the bottom (under it only a blank row): the relay carries that
# block, not the transcript above it (whose user messages have the bar too, apart by a blank row).
dialog_line = ^\s*┃

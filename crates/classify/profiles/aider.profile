# Aider, as observed on 0.86.x in tmux (testdata/panes/aider/ holds the captures).
# Format: `key = value`, one per line; regex keys may repeat (the values are alternatives).
# Lines are matched after normalisation: escapes stripped, trailing blanks trimmed.
name = aider
agent = Aider
versions = 0.86.x

# Auto-detection: lines near the bottom that this CLI prints. Aider draws a `────` rule above its
# prompt; Claude Code's box has two such rules, so the rule counts for both and the others decide.
detect = ^─{8,}$
detect = ^You can skip this check with --no-
# Not its `>` prompt: every REPL has one (`sqlite>`, node's `>`, `mysql>`), and a profile picked
# from a prompt alone called them Aider's input line and typed into them. `input_line` reads the
# prompt once something only Aider prints has picked this profile (a watch keeps it per pane).
detect = \(Y\)es/\(N\)o
detect = ^Tokens: \S+ sent, \S+ received\.
detect = ^Aider v\d
detect = ^(?:Main|Weak) model: \S+
detect = ^Repo-map: 
detect = ^Applied edit to \S
detect = Waiting for \S+$

# No input box: the prompt is the LAST line whenever Aider waits for input: `> ` (`ask> `,
# `architect> `, … in other chat modes), with the files in the chat on the line above it.
# `>>>>>>> REPLACE` in an edit block does not match (a second `>`).
input_line = ^(?:[a-z-]+)?>(?:\s|$)
# Yes/no questions are asked inline on that same last line, no dialog:
# `Create new file? (Y)es/(N)o [Yes]:`, `Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:`.
inline_question = \(Y\)es/\(N\)o.*\[(?:Yes|No)\]:
inline_question = \[(?:Yes|No)\]:(?:\s+\S*)?$

# Live chrome: before the first token, a moving `░█` bar and `Waiting for <model>`.
spinner = ^\s*[░█]+\s+Waiting for \S+$

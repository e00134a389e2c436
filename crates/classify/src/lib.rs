//! Pure pane classification.

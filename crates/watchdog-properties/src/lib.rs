//! Nothing but a home: bmb-watchdog's property tests are this package's `tests/`, kept out of
//! bmb-watchdog so that its graph, dev-dependencies included, reaches no crate that calls the OS.
//! They drive the monitors through bmb-watchdog's public API only.

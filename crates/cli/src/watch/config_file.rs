//! `--config FILE` as `watch` reads it: the file loaded and its mistakes
//! worded, the settings built from it, and its re-reading on SIGHUP.

use super::Args;
use super::config;
use super::cycle::Watch;
use super::fd_budget::fd_shortage;
use super::settings::Settings;
use super::watchdog_budget::check_watchdog;
use crate::output::say;

/// Where the monitor a config file describes serves its board
/// (`metrics_listen`), for `status --config`; `Err` is the lines that say
/// what is wrong with the file.
pub(crate) fn config_endpoint(path: &std::path::Path) -> Result<Option<String>, Vec<String>> {
    let config = load_config(path, &crate::profiles::in_force_quietly())?;
    Ok(config.metrics_listen.map(|addr| addr.to_string()))
}

/// The config file read and checked, or the lines that say what is wrong
/// with it (`FILE:LINE: KEY: what`), without the command's prefix.
fn load_config(
    path: &std::path::Path,
    profiles: &classify::Profiles,
) -> Result<config::Config, Vec<String>> {
    let shown = path.display();
    config::read(path, profiles).map_err(|error| match error {
        config::LoadError::Unreadable(why) => {
            vec![format!("cannot read the config file {shown}: it {why}")]
        }
        config::LoadError::Mistakes(mistakes) => mistakes
            .iter()
            .map(|mistake| format!("{shown}:{mistake}"))
            .collect(),
    })
}

/// The config file's settings, or the lines that say what is wrong with it
/// (`bmb-monitor: watch: FILE:LINE: KEY: what`).
pub(super) fn read_config(
    args: &Args,
    path: &std::path::Path,
    profiles: &classify::Profiles,
) -> Result<Settings, Vec<String>> {
    let said = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .map(|line| format!("bmb-monitor: watch: {line}"))
            .collect()
    };
    let config = load_config(path, profiles).map_err(said)?;
    Settings::from_config(args, config).map_err(|message| said(vec![message]))
}

/// SIGHUP: the file re-read and applied, or, when it no longer reads, said
/// and the settings in force kept.
/// `args` is the command line (what the file leaves out is its default).
pub(super) fn reload(watch: &mut Watch<'_>, args: &Args, path: &std::path::Path) {
    // A profile added since may be what the new file names.
    watch.reload_profiles();
    let settings = match read_config(args, path, &watch.current_profiles) {
        Ok(settings) => settings,
        Err(lines) => {
            for line in lines {
                say(line);
            }
            say(format_args!(
                "bmb-monitor: watch: {} not reloaded: the settings in force are kept",
                path.display()
            ));
            watch.fleet.reloaded(false);
            return;
        }
    };
    // As at the start: an interval systemd's watchdog would kill between
    // two pings is refused, and the settings in force are kept.
    if let Some(why) = check_watchdog(&settings.args, &settings.targets) {
        say(format_args!(
            "bmb-monitor: watch: {}: {why}; not reloaded: the settings in force are kept",
            path.display()
        ));
        watch.fleet.reloaded(false);
        return;
    }
    // As at the start: targets the open-file limit cannot hold are refused.
    if let Some(why) = fd_shortage(settings.targets.iter().map(|t| &t.target)) {
        say(format_args!(
            "bmb-monitor: watch: {}: {why}; not reloaded: the settings in force are kept",
            path.display()
        ));
        watch.fleet.reloaded(false);
        return;
    }
    let done = watch.reload(settings);
    watch.fleet.reloaded(true);
    let list = |names: &[String]| {
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    say(format_args!(
        "bmb-monitor: watch: reloaded {}: {} targets (added: {}; removed: {}; changed: {})",
        path.display(),
        watch.watched.len(),
        list(&done.added),
        list(&done.removed),
        list(&done.changed)
    ));
}

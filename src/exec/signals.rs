//! SIGTERM, SIGHUP and SIGINT delivered to a thread (via signal-hook), which runs the orderly
//! shutdown with the conventional exit code (128 + signal number).

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Starts the signal thread; `on_signal(exit_code)` runs once, for the first signal. A second
/// signal during shutdown exits at once with its code.
pub fn spawn(on_signal: impl Fn(i32) + Send + Sync + 'static) -> std::io::Result<()> {
    let mut signals = Signals::new([SIGTERM, SIGHUP, SIGINT])?;
    let on_signal = std::sync::Arc::new(on_signal);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut first = true;
            for sig in signals.forever() {
                let code = 128 + sig;
                if first {
                    first = false;
                    // The shutdown may take a moment; a second signal must still be seen.
                    let on = std::sync::Arc::clone(&on_signal);
                    std::thread::spawn(move || on(code));
                } else {
                    super::groups::kill_all();
                    std::process::exit(code);
                }
            }
        })?;
    Ok(())
}

//! Ending the process: every exit path of a running pi-rpc goes through [`shutdown`], so the
//! process groups of the children it started (bash commands, tool processes) are killed first,
//! and auth.json lock directories still held (a refresh cut short) are removed.

/// Ends the process after killing child process groups.
pub fn shutdown(code: i32) -> ! {
    crate::exec::groups::kill_all();
    crate::llm::oauth::lock::release_all_held();
    std::process::exit(code)
}

//! `pi-rpc login <provider> [--api-key]` and `pi-rpc logout <provider>`: sign in headlessly
//! (URLs and device codes go to stderr, pasted codes and API keys come from stdin) and store
//! the credential in `<agentDir>/auth.json` under pi's lock, exactly as pi's `/login` does, so
//! pi and pi-rpc share it. The flows are in `llm::oauth::login`.

use std::io::BufRead;

use crossbeam_channel::bounded;

use crate::llm::oauth::{self, login};

const USAGE: &str = "Usage: pi-rpc login <provider> [--api-key]\n       pi-rpc logout <provider>";

/// Runs the subcommand when `args` (without the program name) starts with `login` or
/// `logout`; `None` otherwise. The value is the exit code.
pub fn run(args: &[String]) -> Option<i32> {
    let command = args.first()?.as_str();
    if command != "login" && command != "logout" {
        return None;
    }
    let rest = &args[1..];
    let api_key = rest.iter().any(|a| a == "--api-key");
    let providers: Vec<&String> = rest.iter().filter(|a| !a.starts_with('-')).collect();
    let unknown_flag = rest
        .iter()
        .find(|a| a.starts_with('-') && *a != "--api-key");
    let (Some(provider), 1, None) = (providers.first(), providers.len(), unknown_flag) else {
        eprintln!("{USAGE}");
        return Some(2);
    };
    let auth_path = crate::resources::settings::agent_dir_from_env().join("auth.json");
    if command == "logout" {
        return Some(match login::save(&auth_path, provider, None) {
            Ok(true) => {
                eprintln!("Logged out of {provider}");
                0
            }
            Ok(false) => {
                eprintln!("No credentials stored for {provider}");
                0
            }
            Err(e) => {
                eprintln!("Logout failed: {e}");
                1
            }
        });
    }
    let (tx, rx) = bounded::<Option<String>>(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    let env = |name: &str| std::env::var(name).ok();
    let io = login::Interaction {
        show: &|text: &str| eprintln!("{text}"),
        input: rx,
        env: &env,
        now_ms: &crate::util::now_ms,
    };
    let entry = if api_key || !oauth::is_oauth_provider(provider) {
        login::api_key_login(provider, &io)
    } else {
        login::login(provider, &io)
    };
    Some(
        match entry.and_then(|e| login::save(&auth_path, provider, Some(e))) {
            Ok(_) => {
                eprintln!(
                    "Logged in to {provider}; credentials saved in {}",
                    auth_path.display()
                );
                0
            }
            Err(e) => {
                eprintln!("Login failed: {e}");
                1
            }
        },
    )
}

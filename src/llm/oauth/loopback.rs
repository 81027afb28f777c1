//! The loopback redirect server of the browser sign-in flows (pi's `callback-server.js`): one
//! thread accepts `GET <path>?code=…&state=…` on 127.0.0.1 (or `PI_OAUTH_CALLBACK_HOST`),
//! answers a small HTML page and hands the query to the login flow. Wrong paths get 404, a
//! wrong `state` 400, a second callback 409.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver};

/// The query of an accepted callback, or the error it carried.
pub type Outcome = Result<HashMap<String, String>, String>;

/// A running callback server; stops when dropped.
pub struct Callback {
    pub port: u16,
    pub rx: Receiver<Outcome>,
    stop: Arc<AtomicBool>,
}

impl Drop for Callback {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space).
pub fn parse_query(q: &str) -> HashMap<String, String> {
    fn decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    let hex = |c: u8| (c as char).to_digit(16);
                    match (hex(b[i + 1]), hex(b[i + 2])) {
                        (Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    }
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    let mut m = HashMap::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        m.entry(decode(k)).or_insert_with(|| decode(v));
    }
    m
}

fn page(title: &str, detail: Option<&str>) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>pi</title></head><body><h1>{}</h1>{}</body></html>",
        esc(title),
        detail.map(|d| format!("<p>{}</p>", esc(d))).unwrap_or_default()
    )
}

fn respond(stream: &mut TcpStream, status: u16, html: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        409 => "Conflict",
        _ => "Error",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
        html.len()
    );
    let _ = stream.flush();
}

/// The request target of a request head (`GET /path?q HTTP/1.1`), when it is a GET.
fn read_target(stream: &mut TcpStream) -> Option<(String, String)> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next()?.split(' ');
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    Some((method, target))
}

/// Starts the server on `host:port` (0: any free port). `state`, when given, must match.
pub fn start(
    host: &str,
    port: u16,
    path: &str,
    state: Option<String>,
    provider_name: &str,
) -> io::Result<Callback> {
    let listener = TcpListener::bind((host, port))?;
    let port = listener.local_addr()?.port();
    listener.set_nonblocking(true)?;
    let (tx, rx) = bounded::<Outcome>(1);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = Arc::clone(&stop);
    let path = path.to_string();
    let name = provider_name.to_string();
    std::thread::Builder::new()
        .name("oauth-callback".into())
        .spawn(move || {
            let mut settled = false;
            while !stop2.load(Ordering::SeqCst) {
                let mut stream = match listener.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(25));
                        continue;
                    }
                    Err(_) => continue,
                };
                let _ = stream.set_nonblocking(false);
                let Some((method, target)) = read_target(&mut stream) else {
                    continue;
                };
                let (p, q) = target.split_once('?').unwrap_or((&target, ""));
                if method != "GET" || p != path {
                    respond(&mut stream, 404, &page("Callback route not found.", None));
                    continue;
                }
                let query = parse_query(q);
                if let Some(expected) = &state {
                    if query.get("state") != Some(expected) {
                        respond(&mut stream, 400, &page("State mismatch.", None));
                        continue;
                    }
                }
                if settled {
                    respond(
                        &mut stream,
                        409,
                        &page("This sign-in has already been handled.", None),
                    );
                    continue;
                }
                if let Some(error) = query.get("error") {
                    let description = query.get("error_description").unwrap_or(error);
                    respond(
                        &mut stream,
                        400,
                        &page(&format!("{name} authorization failed."), Some(description)),
                    );
                    settled = true;
                    let _ = tx.try_send(Err(format!("{name} authorization failed: {description}")));
                    continue;
                }
                if query.get("code").is_none_or(|c| c.is_empty()) {
                    respond(&mut stream, 400, &page("Missing authorization code.", None));
                    continue;
                }
                respond(
                    &mut stream,
                    200,
                    &page(
                        &format!("Signed in to {name}. You may now close this page."),
                        None,
                    ),
                );
                settled = true;
                let _ = tx.try_send(Ok(query));
            }
        })?;
    Ok(Callback { port, rx, stop })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(port: u16, target: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn callbacks_are_checked_then_handed_over_once() {
        let cb = start("127.0.0.1", 0, "/callback", Some("st".into()), "Test").unwrap();
        assert!(get(cb.port, "/other?code=1").starts_with("HTTP/1.1 404"));
        assert!(get(cb.port, "/callback?code=1&state=bad").starts_with("HTTP/1.1 400"));
        assert!(get(cb.port, "/callback?state=st").starts_with("HTTP/1.1 400"));
        assert!(get(cb.port, "/callback?code=a%2Fb+c&state=st").starts_with("HTTP/1.1 200"));
        assert!(get(cb.port, "/callback?code=2&state=st").starts_with("HTTP/1.1 409"));
        let q = cb.rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
        assert_eq!(q["code"], "a/b c");
    }

    #[test]
    fn an_error_callback_ends_the_login() {
        let cb = start("127.0.0.1", 0, "/cb", None, "Test").unwrap();
        assert!(get(cb.port, "/cb?error=access_denied").starts_with("HTTP/1.1 400"));
        assert_eq!(
            cb.rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap()
                .unwrap_err(),
            "Test authorization failed: access_denied"
        );
    }

    #[test]
    fn queries_decode() {
        let q = parse_query("a=1&b=x%20y+z&c&a=2&d=%zz");
        assert_eq!(q["a"], "1");
        assert_eq!(q["b"], "x y z");
        assert_eq!(q["c"], "");
        assert_eq!(q["d"], "%zz");
    }
}

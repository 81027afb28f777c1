//! The writer thread owns fd 1. Producers (processor, agent, bash threads) send serialized lines
//! over a bounded channel; when the host reads slowly the channel fills and producers block, which
//! is the backpressure that keeps memory bounded. A closed stdout (or any other fatal write
//! error) ends the process quietly through the caller's `on_closed` (RPC mode exits with code 1,
//! rpc-protocol.md §1); `EAGAIN` and `ENOBUFS` are not fatal: the write is retried every 10 ms.

use std::io::{ErrorKind, Write};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::output::{OutMsg, Output, OUTPUT_CAPACITY};
#[cfg(test)]
use crate::protocol::{Event, Response};

/// How often a write that failed with `EAGAIN` / `ENOBUFS` is retried (pi's interval).
const RETRY_EVERY: Duration = Duration::from_millis(10);

/// What the writer thread does when stdout is closed under it.
pub type OnClosed = Box<dyn FnOnce() + Send>;

/// Starts the writer thread over `sink`. `on_closed` runs once if a write fails with a broken
/// pipe (or any other fatal error); it is expected to end the process.
pub fn spawn<W: Write + Send + 'static>(sink: W, on_closed: OnClosed) -> (Output, JoinHandle<()>) {
    let (tx, rx) = bounded::<OutMsg>(OUTPUT_CAPACITY);
    let handle = std::thread::Builder::new()
        .name("stdout-writer".into())
        .spawn(move || writer_loop(sink, rx, on_closed))
        .unwrap_or_else(|e| {
            eprintln!("pi-rpc: cannot start the writer thread: {e}");
            std::process::exit(1);
        });
    (Output::new(tx), handle)
}

/// A sink whose `EAGAIN` (a non-blocking stdout with a full pipe) and `ENOBUFS` failures are
/// waited out: the write is retried every [`RETRY_EVERY`], as pi does. Everything else is
/// passed through, so it reaches the writer loop as fatal.
struct Patient<W>(W);

impl<W> Patient<W> {
    fn retry<T>(&mut self, mut op: impl FnMut(&mut W) -> std::io::Result<T>) -> std::io::Result<T> {
        loop {
            match op(&mut self.0) {
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock
                        || e.raw_os_error() == Some(libc::ENOBUFS) =>
                {
                    std::thread::sleep(RETRY_EVERY)
                }
                other => return other,
            }
        }
    }
}

impl<W: Write> Write for Patient<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.retry(|w| w.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.retry(|w| w.flush())
    }
}

fn writer_loop<W: Write>(sink: W, rx: Receiver<OutMsg>, on_closed: OnClosed) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, Patient(sink));
    let mut pending_flushes: Vec<Sender<()>> = Vec::new();
    let mut failed = false;
    while let Ok(first) = rx.recv() {
        let mut msg = Some(first);
        // Drain what is already queued before flushing, so bursts become one write.
        while let Some(m) = msg.take() {
            match m {
                OutMsg::Line(l) => {
                    if !failed {
                        if let Err(e) = write_line(&mut out, &l) {
                            failed = true;
                            report_failure(&e);
                            break;
                        }
                    }
                }
                OutMsg::Flush(done) => pending_flushes.push(done),
            }
            msg = rx.try_recv().ok();
        }
        if !failed {
            if let Err(e) = out.flush() {
                failed = true;
                report_failure(&e);
            }
        }
        for done in pending_flushes.drain(..) {
            let _ = done.send(());
        }
        if failed {
            on_closed();
            return;
        }
    }
    let _ = out.flush();
}

fn write_line<W: Write>(out: &mut W, line: &str) -> std::io::Result<()> {
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")
}

fn report_failure(e: &std::io::Error) {
    if e.kind() != ErrorKind::BrokenPipe {
        eprintln!("pi-rpc: stdout write failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::Error::from(ErrorKind::BrokenPipe))
        }
    }

    #[test]
    fn lines_are_written_in_order() {
        let buf = Buf::default();
        let (out, handle) = spawn(buf.clone(), Box::new(|| {}));
        out.event(&Event::AgentStart);
        out.response(&Response::ok(None, "abort", None));
        out.flush();
        drop(out);
        handle.join().unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "{\"type\":\"agent_start\"}\n{\"type\":\"response\",\"command\":\"abort\",\"success\":true}\n"
        );
    }

    /// Fails every other call with `err`, accepting at most 3 bytes per write otherwise.
    struct Flaky {
        buf: Buf,
        err: fn() -> std::io::Error,
        calls: usize,
    }
    impl Write for Flaky {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.calls += 1;
            if self.calls % 2 == 1 {
                return Err((self.err)());
            }
            let n = b.len().min(3);
            self.buf.write(&b[..n])
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn eagain_and_enobufs_are_retried_not_fatal() {
        let errors: [fn() -> std::io::Error; 2] = [
            || std::io::Error::from(ErrorKind::WouldBlock),
            || std::io::Error::from_raw_os_error(libc::ENOBUFS),
        ];
        for err in errors {
            let buf = Buf::default();
            let sink = Flaky {
                buf: buf.clone(),
                err,
                calls: 0,
            };
            let closed = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&closed);
            let (out, handle) = spawn(sink, Box::new(move || flag.store(true, Ordering::SeqCst)));
            out.event(&Event::AgentStart);
            out.flush();
            drop(out);
            handle.join().unwrap();
            assert!(!closed.load(Ordering::SeqCst));
            let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
            assert_eq!(text, "{\"type\":\"agent_start\"}\n");
        }
    }

    #[test]
    fn broken_pipe_calls_on_closed() {
        let (tx, rx) = bounded(1);
        let (out, handle) = spawn(
            Closed,
            Box::new(move || {
                let _ = tx.send(());
            }),
        );
        out.event(&Event::AgentStart);
        out.flush();
        rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        handle.join().unwrap();
        // Sending after the writer stopped neither blocks nor panics.
        out.event(&Event::AgentStart);
    }
}

//! Cancellation tokens: an abort travels as a flag that loops check between steps, plus hooks
//! that interrupt what a flag cannot reach (a blocked socket read, a running child process).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next_id: AtomicU64,
    hooks: Mutex<Vec<(u64, Hook)>>,
}

/// A cloneable cancellation flag with interrupt hooks.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Sets the flag and runs every registered hook once (on the calling thread).
    pub fn cancel(&self) {
        if self.0.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        let hooks: Vec<(u64, Hook)> = std::mem::take(&mut *self.0.hooks.lock());
        for (_, hook) in hooks {
            hook();
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Registers `hook` to run on cancellation; it runs at once if the token is already
    /// cancelled. Dropping the guard unregisters it.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> HookGuard {
        let id = self.0.next_id.fetch_add(1, Ordering::SeqCst);
        {
            let mut hooks = self.0.hooks.lock();
            if !self.is_cancelled() {
                hooks.push((id, Box::new(hook)));
                return HookGuard {
                    token: self.clone(),
                    id,
                };
            }
        }
        hook();
        HookGuard {
            token: self.clone(),
            id,
        }
    }
}

/// Unregisters its hook when dropped.
pub struct HookGuard {
    token: CancelToken,
    id: u64,
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        self.token.0.hooks.lock().retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn hooks_run_once_and_guards_unregister() {
        let t = CancelToken::new();
        let n = Arc::new(AtomicUsize::new(0));
        let n1 = Arc::clone(&n);
        let _g = t.on_cancel(move || {
            n1.fetch_add(1, Ordering::SeqCst);
        });
        let n2 = Arc::clone(&n);
        let g2 = t.on_cancel(move || {
            n2.fetch_add(10, Ordering::SeqCst);
        });
        drop(g2);
        t.cancel();
        t.cancel();
        assert_eq!(n.load(Ordering::SeqCst), 1);
        assert!(t.is_cancelled());
        let n3 = Arc::clone(&n);
        let _g3 = t.on_cancel(move || {
            n3.fetch_add(100, Ordering::SeqCst);
        });
        assert_eq!(n.load(Ordering::SeqCst), 101);
    }
}

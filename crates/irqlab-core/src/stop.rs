//! Stopping a run from another thread (a Ctrl-C handler): one flag type for both engines,
//! so `irqlab run` and `irqlab rt` stop the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A flag another thread sets to stop a run, as fio is stopped by SIGINT: the simulator
/// ends at its next batch of events; the runtime's jobs stop issuing and wait for their
/// I/Os in flight, so every command submitted completes once. Either report covers the
/// run up to then and says it was interrupted.
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Option<Arc<AtomicBool>>);

impl StopFlag {
    pub fn new(flag: Arc<AtomicBool>) -> StopFlag {
        StopFlag(Some(flag))
    }

    pub fn is_set(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Two flags are equal when they are the same flag (or both absent).
impl PartialEq for StopFlag {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for StopFlag {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_is_set_from_elsewhere_and_equal_only_to_itself() {
        let f = Arc::new(AtomicBool::new(false));
        let a = StopFlag::new(f.clone());
        assert!(!a.is_set());
        f.store(true, Ordering::Relaxed);
        assert!(a.is_set() && a.clone().is_set());
        assert!(!StopFlag::default().is_set());
        assert_eq!(a, a.clone());
        assert_ne!(a, StopFlag::new(Arc::new(AtomicBool::new(true))));
        assert_ne!(a, StopFlag::default());
        assert_eq!(StopFlag::default(), StopFlag::default());
    }
}

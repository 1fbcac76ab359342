//! Per-connection resources that end with what owns them.
//!
//! A client connection starts tasks that outlive the request that started
//! them: an attachment's forwarder, a transcript follower, an event
//! subscription. Each is owned by exactly one place, and dropping that
//! place ends it:
//!
//! - [`TaskGuard`] owns a task and aborts it when dropped;
//! - [`Slots`] holds a connection's resources of one kind by session id;
//!   replacing or removing an entry drops the old one (ending its task),
//!   and dropping the `Slots` (with the connection's context) ends them all.
//!
//! Ownership runs one way, connection → slot → task: a task never holds
//! the connection's context, only what it needs to do its work (the
//! connection's out queue, the daemon) and a [`SlotKey`], a weak handle
//! with which it removes its own entry when it ends on its own (the holder
//! went away). The generation in the key makes that removal exact: a task
//! that ends after a newer resource took its session's slot leaves the
//! newer one alone.
//!
//! Values are dropped outside the lock (a drop may abort a task, which
//! must not happen while another thread waits on the map).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Aborts its task when dropped.
#[derive(Debug)]
pub struct TaskGuard(tokio::task::JoinHandle<()>);

impl TaskGuard {
    /// Owns `task` from now on.
    pub fn new(task: tokio::task::JoinHandle<()>) -> Self {
        Self(task)
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct SlotMap<V> {
    next_gen: u64,
    entries: HashMap<String, (u64, V)>,
}

/// One connection's resources of one kind, by session id (see the module
/// doc).
pub struct Slots<V> {
    inner: Arc<Mutex<SlotMap<V>>>,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new(SlotMap {
                next_gen: 0,
                entries: HashMap::new(),
            })),
        }
    }
}

/// A task's weak handle on its own entry.
pub struct SlotKey<V> {
    map: Weak<Mutex<SlotMap<V>>>,
    key: String,
    generation: u64,
}

impl<V> Clone for SlotKey<V> {
    fn clone(&self) -> Self {
        Self {
            map: self.map.clone(),
            key: self.key.clone(),
            generation: self.generation,
        }
    }
}

fn lock<V>(m: &Mutex<SlotMap<V>>) -> MutexGuard<'_, SlotMap<V>> {
    // A panic while holding this lock leaves the map consistent (every
    // operation is one insert or remove): keep using it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<V> Slots<V> {
    /// A key for a new entry under `key`, to give the task that the entry
    /// will own before the entry exists ([`Slots::put`]).
    pub fn key(&self, key: &str) -> SlotKey<V> {
        let mut m = lock(&self.inner);
        m.next_gen += 1;
        SlotKey {
            map: Arc::downgrade(&self.inner),
            key: key.to_string(),
            generation: m.next_gen,
        }
    }

    /// Puts `value` under `k`, dropping what was there.
    pub fn put(&self, k: &SlotKey<V>, value: V) {
        let old = lock(&self.inner)
            .entries
            .insert(k.key.clone(), (k.generation, value));
        drop(old);
    }

    /// Removes and returns the first entry `matches` picks.
    pub fn take_first(&self, matches: impl Fn(&str, &V) -> bool) -> Option<V> {
        let mut m = lock(&self.inner);
        let key = m
            .entries
            .iter()
            .find(|(k, (_, v))| matches(k, v))
            .map(|(k, _)| k.clone())?;
        m.entries.remove(&key).map(|(_, v)| v)
    }

    /// What `f` makes of the first entry (key, value) `matches` picks.
    pub fn find_map<R>(
        &self,
        matches: impl Fn(&str, &V) -> bool,
        f: impl FnOnce(&str, &V) -> R,
    ) -> Option<R> {
        let m = lock(&self.inner);
        m.entries
            .iter()
            .find(|(k, (_, v))| matches(k, v))
            .map(|(k, (_, v))| f(k, v))
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        lock(&self.inner).entries.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<V> SlotKey<V> {
    /// Removes this key's entry if it is still the one it was made for
    /// (and the connection still exists).
    pub fn release(&self) {
        let Some(map) = self.map.upgrade() else {
            return;
        };
        let mut m = lock(&map);
        let ours = m
            .entries
            .get(&self.key)
            .is_some_and(|(g, _)| *g == self.generation);
        let old = if ours {
            m.entries.remove(&self.key)
        } else {
            None
        };
        drop(m);
        drop(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn pending_task() -> (TaskGuard, tokio::sync::oneshot::Receiver<()>) {
        // The receiver sees the sender dropped when the task is aborted.
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _tx = tx;
            std::future::pending::<()>().await;
        });
        (TaskGuard::new(task), rx)
    }

    #[tokio::test]
    async fn dropping_the_slots_ends_every_task() {
        let slots: Slots<TaskGuard> = Slots::default();
        let (a, a_done) = pending_task();
        let (b, b_done) = pending_task();
        slots.put(&slots.key("a"), a);
        slots.put(&slots.key("b"), b);
        assert_eq!(slots.len(), 2);
        drop(slots);
        for done in [a_done, b_done] {
            tokio::time::timeout(Duration::from_secs(5), done)
                .await
                .expect("task aborted")
                .expect_err("sender dropped, nothing sent");
        }
    }

    #[tokio::test]
    async fn replacing_an_entry_ends_the_old_task_only() {
        let slots: Slots<TaskGuard> = Slots::default();
        let (old, old_done) = pending_task();
        let (new, mut new_done) = pending_task();
        slots.put(&slots.key("s"), old);
        slots.put(&slots.key("s"), new);
        tokio::time::timeout(Duration::from_secs(5), old_done)
            .await
            .expect("old task aborted")
            .expect_err("nothing sent");
        assert!(new_done
            .try_recv()
            .is_err_and(|e| e == tokio::sync::oneshot::error::TryRecvError::Empty));
        assert_eq!(slots.len(), 1);
    }

    #[test]
    fn a_stale_key_does_not_release_a_newer_entry() {
        let slots: Slots<u32> = Slots::default();
        let first = slots.key("s");
        slots.put(&first, 1);
        let second = slots.key("s");
        slots.put(&second, 2);
        first.release();
        assert_eq!(slots.find_map(|k, _| k == "s", |_, v| *v), Some(2));
        second.release();
        assert!(slots.is_empty());
    }

    #[test]
    fn a_clone_of_the_key_releases_its_entry() {
        let slots: Slots<u32> = Slots::default();
        let k = slots.key("s");
        let own = k.clone();
        slots.put(&k, 1);
        own.release();
        assert!(slots.is_empty());
    }

    #[test]
    fn a_key_outliving_its_slots_releases_nothing() {
        let slots: Slots<u32> = Slots::default();
        let k = slots.key("s");
        slots.put(&k, 1);
        drop(slots);
        k.release();
    }

    #[test]
    fn take_first_removes_what_matches() {
        let slots: Slots<u32> = Slots::default();
        slots.put(&slots.key("abc"), 1);
        slots.put(&slots.key("xyz"), 2);
        assert_eq!(slots.take_first(|k, _| k.starts_with("ab")), Some(1));
        assert_eq!(slots.take_first(|k, _| k.starts_with("ab")), None);
        assert_eq!(slots.len(), 1);
    }
}

//! A client connection's outgoing lines, bounded in **bytes**.
//!
//! A line count is no bound: an output line is up to ~88 KB (a 64 KiB chunk
//! in base64), a reply a few hundred bytes. Each queued line holds permits
//! of a per-connection semaphore worth its length (capped at the budget, so
//! one line larger than the budget still passes alone); the writer task
//! returns them once the line is written to the socket. A client that stops
//! reading therefore pins at most [`OUT_BUDGET`] bytes in the daemon, after
//! which its senders wait — the attachment forwarders among them, which
//! makes the holder drop that attachment's queue and resync it later
//! (`ccd_holder::fanout`).
//!
//! Ownership: any number of [`OutSender`] clones (request tasks, attachment
//! forwarders, the event subscription); one [`OutReceiver`], owned by the
//! connection's writer task. When the writer ends (the client left), it
//! closes the budget: waiting and later sends fail at once instead of
//! waiting for permits nobody will return. When the daemon stops, the
//! writer [`OutReceiver::close`]s the queue: later sends fail, the lines
//! already queued are still received (and written).

use std::os::fd::OwnedFd;
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// Bytes queued for one client before its senders wait.
pub const OUT_BUDGET: usize = 8 * 1024 * 1024;

/// One queued line, with the descriptor to pass along with its first byte
/// (a direct stream's holder connection, `SCM_RIGHTS`), if any.
pub struct OutLine {
    pub bytes: Vec<u8>,
    pub fd: Option<OwnedFd>,
}

type Item = (OutLine, OwnedSemaphorePermit);

/// Queues lines for one client.
#[derive(Clone)]
pub struct OutSender {
    tx: mpsc::UnboundedSender<Item>,
    budget: Arc<Semaphore>,
    /// The budget's size: the most permits one line takes.
    size: u32,
}

/// The writer's end.
pub struct OutReceiver {
    rx: mpsc::UnboundedReceiver<Item>,
    budget: Arc<Semaphore>,
}

/// A queue with `budget` bytes.
pub fn channel(budget: usize) -> (OutSender, OutReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let size = budget.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let sem = Arc::new(Semaphore::new(size));
    (
        OutSender {
            tx,
            budget: sem.clone(),
            size: size as u32,
        },
        OutReceiver { rx, budget: sem },
    )
}

impl OutSender {
    /// Queues one encoded line, waiting while the client's budget is spent.
    /// False once the client is gone.
    pub async fn send(&self, line: Vec<u8>) -> bool {
        self.send_line(OutLine {
            bytes: line,
            fd: None,
        })
        .await
    }

    /// Queues one encoded line with a descriptor to pass along with it.
    pub async fn send_with_fd(&self, line: Vec<u8>, fd: OwnedFd) -> bool {
        self.send_line(OutLine {
            bytes: line,
            fd: Some(fd),
        })
        .await
    }

    async fn send_line(&self, line: OutLine) -> bool {
        let n = u32::try_from(line.bytes.len())
            .unwrap_or(u32::MAX)
            .clamp(1, self.size);
        let Ok(permit) = self.budget.clone().acquire_many_owned(n).await else {
            return false;
        };
        self.tx.send((line, permit)).is_ok()
    }
}

impl OutReceiver {
    /// The next line and the permits it holds: drop them once it is written.
    pub async fn recv(&mut self) -> Option<(OutLine, OwnedSemaphorePermit)> {
        self.rx.recv().await
    }

    /// Accepts no more lines (sends, waiting or later, fail) while
    /// [`Self::recv`] still yields the lines already queued, then `None`.
    pub fn close(&mut self) {
        self.rx.close();
        self.budget.close();
    }
}

impl Drop for OutReceiver {
    fn drop(&mut self) {
        self.budget.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn senders_wait_once_the_bytes_are_spent_and_resume_when_written() {
        let (tx, mut rx) = channel(100);
        assert!(tx.send(vec![b'a'; 60]).await);
        assert!(tx.send(vec![b'b'; 40]).await);
        // The budget is spent: the next send waits.
        let t2 = tx.clone();
        let blocked = tokio::spawn(async move { t2.send(vec![b'c'; 10]).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!blocked.is_finished());
        // Writing the first line returns its bytes.
        let (line, permit) = rx.recv().await.unwrap();
        assert_eq!(line.bytes.len(), 60);
        drop(permit);
        assert!(tokio::time::timeout(Duration::from_secs(5), blocked)
            .await
            .unwrap()
            .unwrap());
    }

    #[tokio::test]
    async fn a_line_larger_than_the_budget_passes_alone() {
        let (tx, mut rx) = channel(10);
        assert!(tx.send(vec![0; 1000]).await);
        let (line, _p) = rx.recv().await.unwrap();
        assert_eq!(line.bytes.len(), 1000);
    }

    #[tokio::test]
    async fn a_gone_writer_fails_waiting_senders() {
        let (tx, rx) = channel(10);
        assert!(tx.send(vec![0; 10]).await);
        let t2 = tx.clone();
        let blocked = tokio::spawn(async move { t2.send(vec![0; 5]).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(rx);
        let r = tokio::time::timeout(Duration::from_secs(5), blocked)
            .await
            .unwrap()
            .unwrap();
        assert!(!r);
    }

    #[tokio::test]
    async fn a_closed_queue_refuses_new_lines_but_yields_the_queued_ones() {
        let (tx, mut rx) = channel(10);
        assert!(tx.send(vec![1; 4]).await);
        assert!(tx.send(vec![2; 6]).await);
        // The budget is spent: this one waits, and fails at the close.
        let t2 = tx.clone();
        let blocked = tokio::spawn(async move { t2.send(vec![3; 1]).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        rx.close();
        assert!(!tokio::time::timeout(Duration::from_secs(5), blocked)
            .await
            .unwrap()
            .unwrap());
        assert!(!tx.send(vec![4; 1]).await);
        let (a, _pa) = rx.recv().await.unwrap();
        let (b, _pb) = rx.recv().await.unwrap();
        assert_eq!((a.bytes[0], b.bytes[0]), (1, 2));
        assert!(rx.recv().await.is_none());
    }
}

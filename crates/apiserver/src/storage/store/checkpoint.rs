//! WAL checkpoints on their own thread.
//!
//! SQLite's automatic checkpoint runs inside the committing transaction: every ~1,000 WAL pages
//! one commit copies them into the database file and fsyncs both files. Here that commit is the
//! single writer's, so every write in flight waited for those fsyncs. Instead the writer disables
//! the automatic checkpoint and kicks this thread, which checkpoints (`PASSIVE`: never blocks the
//! writer or readers) on a connection of its own while the writer goes on committing.
//!
//! A passive checkpoint copies only the frames that existed when it started. Under sustained
//! writes it may never catch up completely, and the WAL is only rewound from its start once it
//! has. So the writer watches the WAL's length (reported here) and, past [`WAL_LIMIT_FRAMES`],
//! checkpoints itself between two batches, where nothing can be appended meanwhile. That bounds
//! the WAL file; the in-writer checkpoint is cheap because this thread has already copied most
//! frames.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, mpsc};

use super::{StoreError, StoreSync, db};

/// Committed writes between two kicks of the checkpoint thread (a write appends two to three
/// 4 KiB pages to the WAL, so this is close to SQLite's default of 1,000 pages).
pub(crate) const KICK_EVERY_WRITES: u64 = 400;

/// WAL length (in pages) above which the writer checkpoints itself: 16,384 pages = 64 MiB.
pub(crate) const WAL_LIMIT_FRAMES: i64 = 16_384;

/// The checkpoint thread, as the writer sees it.
pub(crate) struct Checkpointer {
    kick: Option<mpsc::SyncSender<()>>,
    /// WAL length in pages after the latest checkpoint (any connection's).
    wal_frames: Arc<AtomicI64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens a connection to `path` for checkpoints and starts the thread.
    pub(crate) fn spawn(path: &Path, sync: StoreSync) -> Result<Checkpointer, StoreError> {
        let conn = db::open_checkpointer(path, sync)?;
        // One pending kick is enough: kicks that arrive while one is queued add nothing.
        let (kick, rx) = mpsc::sync_channel::<()>(1);
        let wal_frames = Arc::new(AtomicI64::new(0));
        let frames = wal_frames.clone();
        let thread = std::thread::Builder::new()
            .name("store-checkpoint".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    match db::checkpoint(&conn) {
                        Ok(log) => frames.store(log, Ordering::Relaxed),
                        Err(e) => tracing::warn!("WAL checkpoint failed: {e}"),
                    }
                }
            })
            .map_err(|e| StoreError::Internal(format!("spawning checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            kick: Some(kick),
            wal_frames,
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint soon; never blocks.
    pub(crate) fn kick(&self) {
        if let Some(k) = &self.kick {
            let _ = k.try_send(());
        }
    }

    /// Whether the WAL has grown past the limit, so that the writer should checkpoint itself.
    pub(crate) fn wal_too_long(&self) -> bool {
        self.wal_frames.load(Ordering::Relaxed) > WAL_LIMIT_FRAMES
    }

    /// Records the WAL length seen by a checkpoint the writer ran itself.
    pub(crate) fn record(&self, log: i64) {
        self.wal_frames.store(log, Ordering::Relaxed);
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Closing the channel ends the thread after the checkpoint it may be running.
        self.kick = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn write(conn: &mut Connection, ids: std::ops::Range<i64>) {
        let value = vec![b'x'; 1500];
        let tx = conn.transaction().expect("tx");
        for id in ids {
            let name = format!("/k/{}", id % 50);
            let row = db::Row {
                id,
                name: &name,
                created: false,
                deleted: false,
                prev_revision: 0,
                value: &value,
            };
            db::insert(&tx, &row).expect("insert");
        }
        tx.commit().expect("commit");
    }

    #[test]
    fn the_thread_checkpoints_and_the_wal_is_then_rewound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db.sqlite");
        let wal = dir.path().join("db.sqlite-wal");
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut conn = db::open_writer(&path, StoreSync::Full).expect("writer");
        let cp = Checkpointer::spawn(&path, StoreSync::Full).expect("checkpointer");
        write(&mut conn, 1..3_000);
        let wal_len = len(&wal);
        let db_len = len(&path);
        // Over 1,000 pages committed, and the writer did not checkpoint on its own.
        assert!(
            wal_len > 4_000_000,
            "WAL holds the commit ({wal_len} bytes)"
        );
        assert!(
            db_len < 1_000_000,
            "no automatic checkpoint ({db_len} bytes)"
        );
        cp.kick();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while cp.wal_frames.load(Ordering::Relaxed) == 0 {
            assert!(std::time::Instant::now() < deadline, "no checkpoint ran");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            len(&path) > 4_000_000,
            "the pages were copied into the database"
        );
        assert!(!cp.wal_too_long());
        // Everything was copied, so the next commit starts the WAL over instead of growing it.
        write(&mut conn, 3_000..3_010);
        assert_eq!(len(&wal), wal_len, "the WAL was rewound, not extended");
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM kv", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 3_009);
        drop(cp);
    }
}

//! The SQLite revision log (kine-style): one row per write, `id` = global revision.
//!
//! Schema: `kv(id INTEGER PRIMARY KEY AUTOINCREMENT, name, created, deleted, prev_revision, value)`.
//! `AUTOINCREMENT` makes SQLite remember the highest id ever used (in `sqlite_sequence`), so a
//! revision is never handed out twice, even after compaction deletes the newest rows (tombstones).
//!
//! Durability: WAL with `synchronous=FULL` by default ([`StoreSync::Full`]): every commit fsyncs
//! the WAL before the writer acknowledges it, so an acknowledged write survives power loss, as
//! with etcd and kine. Group commit keeps that cheap under concurrency (64 clients write as fast
//! as without the fsync); one client at a time pays the fsync per write.
//! [`StoreSync::Normal`] (`synchronous=NORMAL`) is the explicit faster mode: a commit is
//! appended to the WAL with write(2) before COMMIT returns, so it survives SIGKILL or any crash of
//! this process (the `acknowledged_writes_survive_sigkill` test), and only an OS crash or power
//! loss can lose the most recent WAL tail (never corrupt the database).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, params};

use super::{Obj, Rev, StoreError, StoreSync};

/// Maps SQLite failures to the storage error the REST layer reports as 500.
pub(crate) fn sql_err(context: &str, e: rusqlite::Error) -> StoreError {
    StoreError::Internal(format!("sqlite {context}: {e}"))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (k, v) VALUES ('compact_rev', 0);
";

/// What SQLite reports for `PRAGMA synchronous` on the writer's connection.
pub(crate) fn synchronous(conn: &Connection) -> Result<Option<StoreSync>, StoreError> {
    let level: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .map_err(|e| sql_err("reading synchronous", e))?;
    // 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA: we only ever set NORMAL or FULL.
    match level {
        1 => Ok(Some(StoreSync::Normal)),
        2 => Ok(Some(StoreSync::Full)),
        other => Err(StoreError::Internal(format!(
            "sqlite reports synchronous={other}, expected NORMAL (1) or FULL (2)"
        ))),
    }
}

/// Opens the writer connection to the database file, in WAL mode, and creates the schema.
pub(crate) fn open_writer(p: &Path, sync: StoreSync) -> Result<Connection, StoreError> {
    if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Internal(format!("creating directory {}: {e}", dir.display()))
        })?;
    }
    let conn = Connection::open(p).map_err(|e| sql_err(&format!("opening {}", p.display()), e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(|e| sql_err("enabling WAL", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Internal(format!(
            "sqlite refused WAL mode (got {mode})"
        )));
    }
    // Checkpoints run on their own thread (see `checkpoint`), not inside the writer's commits.
    conn.execute_batch(&format!(
        "PRAGMA synchronous={}; PRAGMA wal_autocheckpoint=0;",
        sync.pragma()
    ))
    .map_err(|e| sql_err("setting synchronous", e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| sql_err("setting busy timeout", e))?;
    conn.execute_batch(SCHEMA)
        .map_err(|e| sql_err("creating schema", e))?;
    Ok(conn)
}

/// Opens a second connection to the database file (the writer's is the first).
fn open_side(
    path: &Path,
    flags: rusqlite::OpenFlags,
    what: &str,
) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| sql_err(&format!("opening {what} {}", path.display()), e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| sql_err("setting busy timeout", e))?;
    Ok(conn)
}

/// Opens a read-only connection for lists at past revisions (file mode only: WAL readers never
/// block the writer and see a consistent committed snapshot).
pub(crate) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    open_side(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY, "reader")
}

/// Opens the connection the checkpoint thread copies the WAL into the database with.
pub(crate) fn open_checkpointer(path: &Path, sync: StoreSync) -> Result<Connection, StoreError> {
    let conn = open_side(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
        "checkpointer",
    )?;
    conn.execute_batch(&format!("PRAGMA synchronous={};", sync.pragma()))
        .map_err(|e| sql_err("setting synchronous", e))?;
    Ok(conn)
}

/// Copies as much of the WAL into the database as can be copied without waiting for anyone
/// (`PASSIVE`). Returns the WAL's length in pages.
pub(crate) fn checkpoint(conn: &Connection) -> Result<i64, StoreError> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1))
        .map_err(|e| sql_err("checkpointing", e))
}

/// What `load` finds on disk.
pub(crate) struct Loaded {
    /// Live keys with their latest values (in storage order).
    pub items: Vec<(Arc<str>, Obj)>,
    /// Highest revision ever assigned.
    pub rev: Rev,
    /// Lists at revisions below this cannot be served from the log.
    pub compact_rev: Rev,
}

/// Reads the latest state of every live key and the revision counters.
pub(crate) fn load(conn: &Connection) -> Result<Loaded, StoreError> {
    let seq: Option<i64> = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'kv'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| sql_err("reading sqlite_sequence", e))?;
    let max_id: Option<i64> = conn
        .query_row("SELECT MAX(id) FROM kv", [], |r| r.get(0))
        .map_err(|e| sql_err("reading max id", e))?;
    let compact_rev: i64 = conn
        .query_row("SELECT v FROM meta WHERE k = 'compact_rev'", [], |r| {
            r.get(0)
        })
        .map_err(|e| sql_err("reading compact_rev", e))?;
    let rev = seq.unwrap_or(0).max(max_id.unwrap_or(0)).max(compact_rev);

    let mut stmt = conn
        .prepare(
            "SELECT name, id, value FROM kv \
             WHERE id IN (SELECT MAX(id) FROM kv GROUP BY name) AND deleted = 0",
        )
        .map_err(|e| sql_err("preparing load", e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_err("loading", e))?;
    let mut items = Vec::new();
    while let Some(row) = rows.next().map_err(|e| sql_err("loading row", e))? {
        let name: String = row.get(0).map_err(|e| sql_err("reading name", e))?;
        let id: i64 = row.get(1).map_err(|e| sql_err("reading id", e))?;
        let value: Vec<u8> = row.get(2).map_err(|e| sql_err("reading value", e))?;
        let obj = obj_from_stored(&name, id, value)?;
        items.push((Arc::<str>::from(name), obj));
    }
    Ok(Loaded {
        items,
        rev,
        compact_rev,
    })
}

/// The log after revision `after` as watch events, so a restarted server lets a watcher resume
/// from the revision it last saw instead of answering 410 and making every client relist. Only
/// a run of consecutive revisions whose previous values are still stored is returned (a gap or
/// a compacted previous value restarts the run after it).
pub(crate) fn load_history(conn: &Connection, after: Rev) -> Result<Vec<super::Event>, StoreError> {
    let mut stmt = conn
        .prepare(
            "SELECT k.id, k.name, k.created, k.deleted, k.value, p.id, p.value FROM kv k \
             LEFT JOIN kv p ON k.prev_revision > 0 AND p.id = k.prev_revision \
             WHERE k.id > ?1 ORDER BY k.id",
        )
        .map_err(|e| sql_err("preparing history", e))?;
    let mut rows = stmt
        .query(params![after])
        .map_err(|e| sql_err("loading history", e))?;
    let mut events: Vec<super::Event> = Vec::new();
    while let Some(row) = rows.next().map_err(|e| sql_err("loading history row", e))? {
        let id: Rev = row.get(0).map_err(|e| sql_err("reading id", e))?;
        if events.last().is_some_and(|e| e.obj.rev + 1 != id) {
            events.clear();
        }
        match event_of_row(row, true)? {
            Some(ev) => events.push(ev),
            // Its previous value is compacted: the run restarts after it.
            None => events.clear(),
        }
    }
    Ok(events)
}

/// The log's events for keys under `prefix`, a namespace's (`/group/resource/namespace/`), with
/// revisions in `(after, upto]`, oldest first; `None` for more than `limit` events: what a
/// watcher resuming from a revision the in-memory history has dropped missed, as etcd serves a
/// watch from any revision after its compaction. With `with_prev`, each event keeps the `prev`
/// that selector-filtered watches need: every row after the compaction mark still has its
/// previous value (compaction deletes only what a revision at or below the mark superseded); a
/// row without it answers Compacted. Without, no previous value is read (half the rows read,
/// decoded and packed when thousands of watchers resume at once).
pub(crate) fn log_between(
    conn: &Connection,
    prefix: &str,
    after: Rev,
    upto: Rev,
    limit: usize,
    with_prev: bool,
) -> Result<Option<Vec<super::Event>>, StoreError> {
    let Some(end) = key_range_end(prefix) else {
        return Ok(None);
    };
    let args = params![after, upto, prefix, end];
    // Counted first, without reading a value: a watcher too far behind costs no decoding.
    let count: i64 = conn
        .prepare_cached(&replay_count_sql(limit.saturating_add(1)))
        .and_then(|mut stmt| stmt.query_row(args, |r| r.get(0)))
        .map_err(|e| sql_err("counting the log", e))?;
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    if count > limit {
        return Ok(None);
    }
    let sql = replay_sql(with_prev);
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(|e| sql_err("preparing log replay", e))?;
    let mut rows = stmt
        .query(args)
        .map_err(|e| sql_err("reading the log", e))?;
    let mut events = Vec::with_capacity(count);
    while let Some(row) = rows.next().map_err(|e| sql_err("reading a log row", e))? {
        let Some(ev) = event_of_row(row, with_prev)? else {
            return Err(StoreError::Compacted {
                requested: after,
                oldest: upto,
            });
        };
        events.push(ev);
    }
    Ok(Some(events))
}

/// The rows of a replay: keys in `[?3, ?4)` (a namespace's), revisions in `(?1, ?2]`. A
/// namespace's rows are few, and found by walking the `(name, id)` index over its key range.
/// The index is named because SQLite's planner prefers the revision range on the primary key
/// whenever the rows are wanted in revision order (no sort), and that range holds every
/// namespace's changes since the revision: at 10,000 agents each resume read tens of thousands
/// of rows, values and all, to return one or two (16% of the manager's CPU in an update round).
const REPLAY_FROM: &str = "FROM kv k INDEXED BY kv_name_id";
const REPLAY_WHERE: &str = "WHERE k.name >= ?3 AND k.name < ?4 AND k.id > ?1 AND k.id <= ?2";

/// Counts a replay's rows, up to `upto` (one past the most a replay may carry).
fn replay_count_sql(upto: usize) -> String {
    format!("SELECT count(*) FROM (SELECT 1 {REPLAY_FROM} {REPLAY_WHERE} LIMIT {upto})")
}

/// The replay's statement, with each change's previous value (`with_prev`) or without.
fn replay_sql(with_prev: bool) -> String {
    if with_prev {
        format!(
            "SELECT k.id, k.name, k.created, k.deleted, k.value, p.id, p.value {REPLAY_FROM} \
             LEFT JOIN kv p ON k.prev_revision > 0 AND p.id = k.prev_revision \
             {REPLAY_WHERE} ORDER BY k.id"
        )
    } else {
        format!(
            "SELECT k.id, k.name, k.created, k.deleted, k.value {REPLAY_FROM} {REPLAY_WHERE} \
             ORDER BY k.id"
        )
    }
}

/// The least string above every key that starts with `prefix`, when one is easily made (its last
/// character is ASCII below DEL); `None` for the empty prefix or any other.
fn key_range_end(prefix: &str) -> Option<String> {
    let (last_at, last) = prefix.char_indices().next_back()?;
    let next = u8::try_from(last).ok().filter(|b| *b < 0x7f)? + 1;
    let mut end = prefix[..last_at].to_string();
    end.push(char::from(next));
    Some(end)
}

/// One row of `SELECT k.id, k.name, k.created, k.deleted, k.value[, p.id, p.value]` as a watch
/// event (the last two columns only `with_prev`); `None` for a change whose previous value was
/// asked for and is no longer stored.
fn event_of_row(
    row: &rusqlite::Row<'_>,
    with_prev: bool,
) -> Result<Option<super::Event>, StoreError> {
    let id: Rev = row.get(0).map_err(|e| sql_err("reading id", e))?;
    let name: String = row.get(1).map_err(|e| sql_err("reading name", e))?;
    let created: bool = row.get(2).map_err(|e| sql_err("reading created", e))?;
    let deleted: bool = row.get(3).map_err(|e| sql_err("reading deleted", e))?;
    let value: Vec<u8> = row.get(4).map_err(|e| sql_err("reading value", e))?;
    let prev = if with_prev && !created {
        let prev_id: Option<Rev> = row.get(5).map_err(|e| sql_err("reading prev id", e))?;
        let prev: Option<Vec<u8>> = row.get(6).map_err(|e| sql_err("reading prev value", e))?;
        match prev {
            Some(p) => Some(obj_from_stored(&name, prev_id.unwrap_or(0), p)?),
            None => return Ok(None),
        }
    } else {
        None
    };
    let kind = if created {
        super::EventKind::Added
    } else if deleted {
        super::EventKind::Deleted
    } else {
        super::EventKind::Modified
    };
    Ok(Some(super::Event {
        kind,
        key: Arc::from(name.as_str()),
        obj: obj_from_stored(&name, id, value)?,
        prev,
    }))
}

/// Rebuilds an `Obj` from a stored row (the stored JSON already carries its resourceVersion).
pub(crate) fn obj_from_stored(name: &str, id: Rev, mut value: Vec<u8>) -> Result<Obj, StoreError> {
    let labels = super::labels_from_json(&value).map_err(|e| {
        StoreError::Internal(format!(
            "stored value of {name} at revision {id} is not valid: {e}"
        ))
    })?;
    value.shrink_to_fit();
    Ok(Obj::plain(Bytes::from(value), id, labels))
}

/// One row to append to the log.
pub(crate) struct Row<'a> {
    pub id: Rev,
    pub name: &'a str,
    pub created: bool,
    pub deleted: bool,
    pub prev_revision: Rev,
    pub value: &'a [u8],
}

/// Appends one row inside the writer's open transaction.
pub(crate) fn insert(tx: &rusqlite::Transaction<'_>, row: &Row<'_>) -> Result<(), StoreError> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO kv (id, name, created, deleted, prev_revision, value) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(|e| sql_err("preparing insert", e))?;
    stmt.execute(params![
        row.id,
        row.name,
        row.created as i64,
        row.deleted as i64,
        row.prev_revision,
        row.value
    ])
    .map_err(|e| sql_err(&format!("inserting {} at revision {}", row.name, row.id), e))?;
    Ok(())
}

/// Deletes rows no list at a revision `>= to` can need, for revisions in `(from, to]`: the rows
/// those revisions superseded (`prev_revision`) and the tombstones themselves. The latest row of
/// a live key is never superseded, so it is never deleted. Returns rows deleted.
pub(crate) fn compact_range(
    conn: &mut Connection,
    from: Rev,
    to: Rev,
) -> Result<usize, StoreError> {
    let tx = conn
        .transaction()
        .map_err(|e| sql_err("beginning compaction", e))?;
    let mut n = tx
        .execute(
            "DELETE FROM kv WHERE id IN (SELECT prev_revision FROM kv \
             WHERE id > ?1 AND id <= ?2 AND prev_revision > 0)",
            params![from, to],
        )
        .map_err(|e| sql_err("compacting superseded rows", e))?;
    n += tx
        .execute(
            "DELETE FROM kv WHERE id > ?1 AND id <= ?2 AND deleted = 1",
            params![from, to],
        )
        .map_err(|e| sql_err("compacting tombstones", e))?;
    tx.execute(
        "UPDATE meta SET v = ?1 WHERE k = 'compact_rev' AND v < ?1",
        params![to],
    )
    .map_err(|e| sql_err("recording compact_rev", e))?;
    tx.commit()
        .map_err(|e| sql_err("committing compaction", e))?;
    Ok(n)
}

/// One page of `prefix` at revision `rev`, read from the log (for revisions whose in-memory
/// snapshot is gone). Walks the `(name, id)` index in key order and fetches only the values of
/// rows that are the key's state at `rev`, so a page costs O(page), not O(table).
#[allow(clippy::too_many_arguments)]
pub(crate) fn list_at(
    conn: &Connection,
    prefix: &str,
    rev: Rev,
    after_key: Option<&str>,
    limit: usize,
    filter: &dyn Fn(&str, &Obj) -> bool,
) -> Result<super::list::PageItems, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT name, id, deleted FROM kv WHERE name >= ?1 AND name > ?2 AND id <= ?3 \
             ORDER BY name, id",
        )
        .map_err(|e| sql_err("preparing list", e))?;
    let mut value_stmt = conn
        .prepare_cached("SELECT value FROM kv WHERE id = ?1")
        .map_err(|e| sql_err("preparing value read", e))?;
    let mut rows = stmt
        .query(params![prefix, after_key.unwrap_or(""), rev])
        .map_err(|e| sql_err("listing", e))?;
    let mut items = Vec::new();
    // The last row seen for the key being walked: (name, id, deleted).
    let mut pending: Option<(String, Rev, bool)> = None;
    let mut more = false;
    loop {
        let next = rows.next().map_err(|e| sql_err("listing row", e))?;
        let next = match next {
            Some(row) => {
                let name: String = row.get(0).map_err(|e| sql_err("reading name", e))?;
                if !name.starts_with(prefix) {
                    None
                } else {
                    let id: i64 = row.get(1).map_err(|e| sql_err("reading id", e))?;
                    let deleted: i64 = row.get(2).map_err(|e| sql_err("reading deleted", e))?;
                    Some((name, id, deleted != 0))
                }
            }
            None => None,
        };
        let same_key = matches!((&pending, &next), (Some(p), Some(n)) if p.0 == n.0);
        if !same_key
            && let Some((name, id, deleted)) = pending.take()
            && !deleted
        {
            if items.len() >= limit {
                more = true;
                break;
            }
            let value: Vec<u8> = value_stmt
                .query_row(params![id], |r| r.get(0))
                .map_err(|e| sql_err(&format!("reading {name} at {id}"), e))?;
            let obj = obj_from_stored(&name, id, value)?;
            if filter(&name, &obj) {
                items.push((Arc::<str>::from(name), obj));
            }
        }
        match next {
            Some(n) => pending = Some(n),
            None => break,
        }
    }
    Ok((items, more))
}

/// Parses `metadata.labels` of a stored or incoming object without building a full tree.
pub(crate) fn parse_labels(json: &[u8]) -> Result<BTreeMap<String, String>, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(default)]
        metadata: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        labels: Option<BTreeMap<String, String>>,
    }
    let top: Top = serde_json::from_slice(json)?;
    Ok(top.metadata.and_then(|m| m.labels).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How SQLite would run `sql` (its `EXPLAIN QUERY PLAN` lines, joined).
    fn plan(conn: &Connection, sql: &str) -> String {
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("plan");
        let rows = stmt
            .query_map(params![1, 2, "/a/", "/a0"], |r| r.get::<_, String>(3))
            .expect("plan rows");
        rows.map(|r| r.expect("plan row"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn a_replay_walks_the_namespaces_keys_not_the_revision_range() {
        let conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(SCHEMA).expect("schema");
        for with_prev in [false, true] {
            let p = plan(&conn, &replay_sql(with_prev));
            assert!(
                p.contains("SEARCH k USING INDEX kv_name_id (name>? AND name<?)"),
                "{p}"
            );
            assert!(!p.contains("k USING INTEGER PRIMARY KEY"), "{p}");
        }
        let p = plan(&conn, &replay_count_sql(17));
        assert!(p.contains("kv_name_id (name>? AND name<?)"), "{p}");
    }
}

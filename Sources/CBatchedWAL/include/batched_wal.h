// A SQLite VFS that hands each commit's write-ahead log frames to the kernel in one write
// (docs/design.md, "The write-ahead log in one write per commit").
//
// SQLite writes a WAL frame as two writes, its 24-byte header and then its page, so a commit
// of n pages costs 2n pwrite calls before its fsync. This VFS wraps the VFS that is SQLite's
// default when it is registered (the "unix" VFS, or baton-crash's recording VFS) and, for files
// opened as a WAL only, keeps contiguous writes in memory until something needs them in the
// file: a sync, a read, a size, a truncate, a file control, a memory map, a write elsewhere, the
// close; and, through the database file of the same connection, the barrier that publishes a
// commit in the WAL index, the release of any lock of the WAL index, and the lowering of the
// database file's own lock (what comes first as a connection leaves exclusive locking mode). Every other file and
// every other call passes straight through.
//
// So no other connection can be told of a frame still in the buffer: a commit is published
// after the barrier, and the write lock is released only after the buffer is out. A WAL whose
// database file does not declare powersafe overwrite is written through (SQLite would publish
// padding written after the commit's sync). Baton opens only its synchronous=FULL connections
// through it, where a commit's sync has written its frames before the barrier.
#ifndef BATON_BATCHED_WAL_H
#define BATON_BATCHED_WAL_H

#include <sqlite3.h>

/// The name to pass to sqlite3_open_v2 once registered.
#define BATCHED_WAL_VFS_NAME "baton-batched-wal"

/// Registers the VFS (not as the default) on top of SQLite's default VFS at the time of the
/// first call; later calls do nothing. Returns SQLITE_OK or SQLite's error code.
int batched_wal_register(void);

/// For tests: if the WAL of connection `db` is open and buffered through this VFS, sets
/// `writes` to the writes SQLite made to it and `flushes` to the writes passed on to the
/// wrapped VFS since it was opened, and `buffered` to the bytes in its buffer now, and returns
/// 1; otherwise returns 0. Call it on the thread using `db`.
int batched_wal_counts(sqlite3 *db, long long *writes, long long *flushes, int *buffered);

#endif

// The VFS of batched_wal.h.
#include "batched_wal.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/// Above this many buffered bytes the buffer is written out before it grows further.
#define BUFFER_LIMIT (4 << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_vfs *real_vfs;
static sqlite3_vfs batched_vfs;

/// An open file: ours first (SQLite allocates szOsFile bytes), the wrapped file after it.
/// SQLite uses one file from one thread at a time, so the buffer needs no lock.
struct batched_file {
    sqlite3_file base;
    sqlite3_file *real;
    int is_wal;
    int length;                 // buffered bytes
    int capacity;
    sqlite3_int64 offset;       // the file offset of buffer[0]
    unsigned char *buffer;
    long long writes;           // writes SQLite made to this WAL
    long long flushes;          // writes this file passed to the wrapped VFS
    struct batched_file *wal;       // a database file: its connection's WAL, while open
    struct batched_file *database;  // a WAL: its connection's database file
};

#define REAL(file) (((struct batched_file *)(file))->real)

/// The most one write passes to the wrapped VFS. SQLite's unix VFS keeps only the low 17 bits
/// of a write's length (`seekAndWriteFd`: `nBuf &= 0x1ffff`; SQLite itself never writes more
/// than one page, at most 64 KiB, at once), so 128 KiB would be written as nothing and
/// reported as a full disk.
#define WRITE_LIMIT (124 << 10)

/// Writes the buffer to the wrapped file, in writes of at most WRITE_LIMIT bytes. On failure
/// the buffer is dropped all the same: SQLite is told through the call that needed the bytes
/// and writes those frames again if it tries the transaction again.
static int flush(struct batched_file *f) {
    int rc = SQLITE_OK;
    for (int done = 0; done < f->length && rc == SQLITE_OK;) {
        int amount = f->length - done < WRITE_LIMIT ? f->length - done : WRITE_LIMIT;
        rc = f->real->pMethods->xWrite(f->real, f->buffer + done, amount, f->offset + done);
        f->flushes++;
        done += amount;
    }
    f->length = 0;
    if (f->capacity > (1 << 20)) {  // a rare large transaction (a migration): give its memory back
        free(f->buffer);
        f->buffer = NULL;
        f->capacity = 0;
    }
    return rc;
}

/// `flush` for a call that only needed the bytes in the file (a read, a size, ...): a failure is
/// an I/O error, which makes SQLite roll back the whole transaction (a full disk reported by a
/// read would roll back only the statement, and the transaction could go on to commit frames
/// that were never written).
static int flush_before(struct batched_file *f) {
    return flush(f) == SQLITE_OK ? SQLITE_OK : SQLITE_IOERR_WRITE;
}

/// The connection's WAL buffer, written out from a call on its database file (see x_shm_lock).
static void flush_wal_of(struct batched_file *database) {
    if (database->wal && database->wal->length > 0) (void)flush(database->wal);
}

static int x_close(sqlite3_file *file) {
    struct batched_file *f = (struct batched_file *)file;
    if (f->database && f->database->wal == f) f->database->wal = NULL;
    if (f->wal && f->wal->database == f) f->wal->database = NULL;
    int flushed = flush(f);
    int rc = f->real->pMethods->xClose(f->real);
    free(f->buffer);
    f->buffer = NULL;
    f->capacity = 0;
    return flushed != SQLITE_OK ? flushed : rc;
}
static int x_read(sqlite3_file *file, void *out, int amount, sqlite3_int64 offset) {
    int rc = flush_before((struct batched_file *)file);
    if (rc != SQLITE_OK) return rc;
    return REAL(file)->pMethods->xRead(REAL(file), out, amount, offset);
}
static int x_write(sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset) {
    struct batched_file *f = (struct batched_file *)file;
    if (!f->is_wal) return f->real->pMethods->xWrite(f->real, data, amount, offset);
    f->writes++;
    if (f->length > 0 && (offset != f->offset + f->length || f->length + amount > BUFFER_LIMIT)) {
        int rc = flush(f);
        if (rc != SQLITE_OK) return rc;
    }
    if (amount > WRITE_LIMIT) {  // never from SQLite (it writes a page, at most 64 KiB, at a time)
        f->flushes++;
        return f->real->pMethods->xWrite(f->real, data, amount, offset);
    }
    if (f->length + amount > f->capacity) {
        int next = f->capacity ? f->capacity : 64 << 10;
        while (next < f->length + amount) next *= 2;
        unsigned char *grown = realloc(f->buffer, (size_t)next);
        if (!grown) {
            // No memory for a larger buffer: write through, as the wrapped VFS would have.
            int rc = flush(f);
            if (rc != SQLITE_OK) return rc;
            f->flushes++;
            return f->real->pMethods->xWrite(f->real, data, amount, offset);
        }
        f->buffer = grown;
        f->capacity = next;
    }
    if (f->length == 0) f->offset = offset;
    memcpy(f->buffer + f->length, data, (size_t)amount);
    f->length += amount;
    return SQLITE_OK;
}
static int x_truncate(sqlite3_file *file, sqlite3_int64 size) {
    int rc = flush_before((struct batched_file *)file);
    if (rc != SQLITE_OK) return rc;
    return REAL(file)->pMethods->xTruncate(REAL(file), size);
}
static int x_sync(sqlite3_file *file, int flags) {
    int rc = flush((struct batched_file *)file);
    if (rc != SQLITE_OK) return rc;
    return REAL(file)->pMethods->xSync(REAL(file), flags);
}
static int x_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    int rc = flush_before((struct batched_file *)file);
    if (rc != SQLITE_OK) return rc;
    return REAL(file)->pMethods->xFileSize(REAL(file), size);
}
static int x_lock(sqlite3_file *file, int level) { return REAL(file)->pMethods->xLock(REAL(file), level); }
/// Called on the database file (and the WAL, which SQLite never locks this way). In exclusive
/// locking mode SQLite takes no lock of the WAL index; a connection that leaves it lowers the
/// database file's lock first, and the WAL's buffer goes out before that.
static int x_unlock(sqlite3_file *file, int level) {
    flush_wal_of((struct batched_file *)file);
    return REAL(file)->pMethods->xUnlock(REAL(file), level);
}
static int x_check_reserved_lock(sqlite3_file *file, int *out) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), out);
}
static int x_file_control(sqlite3_file *file, int op, void *argument) {
    int rc = flush_before((struct batched_file *)file);
    if (rc != SQLITE_OK) return rc;
    return REAL(file)->pMethods->xFileControl(REAL(file), op, argument);
}
static int x_sector_size(sqlite3_file *file) { return REAL(file)->pMethods->xSectorSize(REAL(file)); }
static int x_device_characteristics(sqlite3_file *file) {
    return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file));
}
static int x_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    return REAL(file)->pMethods->xShmMap(REAL(file), page, size, extend, out);
}
/// Called on the database file. Before any lock of the WAL index is released, the WAL's buffer
/// goes to the file, while this connection still holds what it held: frames a transaction
/// spilled before it rolled back (a cache too small for it) would otherwise stay buffered past
/// the write lock, and be written later over frames another connection committed there.
static int x_shm_lock(sqlite3_file *file, int offset, int count, int flags) {
    if (flags & SQLITE_SHM_UNLOCK) flush_wal_of((struct batched_file *)file);
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, count, flags);
}
/// Called on the database file, between the two copies of the WAL index's header that publish a
/// commit: its frames go to the file first. With synchronous=FULL the commit's sync has written
/// them already and this finds the buffer empty.
static void x_shm_barrier(sqlite3_file *file) {
    flush_wal_of((struct batched_file *)file);
    REAL(file)->pMethods->xShmBarrier(REAL(file));
}
static int x_shm_unmap(sqlite3_file *file, int delete_flag) {
    return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}
static int x_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    int rc = flush_before((struct batched_file *)file);
    if (rc != SQLITE_OK) return rc;
    return REAL(file)->pMethods->xFetch(REAL(file), offset, amount, out);
}
static int x_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    return REAL(file)->pMethods->xUnfetch(REAL(file), offset, page);
}

/// One table per version of the wrapped file's methods, so that SQLite sees exactly the
/// methods the wrapped file has.
static const sqlite3_io_methods methods[3] = {
    {1, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
     x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics, 0, 0, 0, 0, 0, 0},
    {2, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
     x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics,
     x_shm_map, x_shm_lock, x_shm_barrier, x_shm_unmap, 0, 0},
    {3, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
     x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics,
     x_shm_map, x_shm_lock, x_shm_barrier, x_shm_unmap, x_fetch, x_unfetch},
};

static int v_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    struct batched_file *f = (struct batched_file *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    memset(f->real, 0, (size_t)real_vfs->szOsFile);
    if (flags & SQLITE_OPEN_WAL) {
        // Buffer only a WAL whose database file is ours (to see its locks and barriers) and
        // declares powersafe overwrite: without it SQLite pads a commit to a sector boundary,
        // syncs, then writes the rest of the padding and publishes it, unsynced. Otherwise
        // write through, as the wrapped VFS would.
        sqlite3_file *database = sqlite3_database_file_object(name);
        if (database && database->pMethods && database->pMethods->xClose == x_close) {
            struct batched_file *d = (struct batched_file *)database;
            if (d->real->pMethods->xDeviceCharacteristics(d->real) & SQLITE_IOCAP_POWERSAFE_OVERWRITE) {
                f->is_wal = 1;
                f->database = d;
            }
        }
    }
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    // The wrapped xOpen may set its methods even when it fails; SQLite then calls xClose.
    const sqlite3_io_methods *wrapped = f->real->pMethods;
    if (!wrapped) {
        f->base.pMethods = NULL;
    } else {
        int version = wrapped->iVersion < 1 ? 1 : wrapped->iVersion > 3 ? 3 : wrapped->iVersion;
        f->base.pMethods = &methods[version - 1];
    }
    if (f->database) {
        if (rc == SQLITE_OK) f->database->wal = f;
        else { f->is_wal = 0; f->database = NULL; }
    }
    return rc;
}
static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}
static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}
static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return real_vfs->xFullPathname(real_vfs, name, size, out);
}
static void *v_dl_open(sqlite3_vfs *vfs, const char *name) { (void)vfs; return real_vfs->xDlOpen(real_vfs, name); }
static void v_dl_error(sqlite3_vfs *vfs, int size, char *out) { (void)vfs; real_vfs->xDlError(real_vfs, size, out); }
static void (*v_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return real_vfs->xDlSym(real_vfs, handle, symbol);
}
static void v_dl_close(sqlite3_vfs *vfs, void *handle) { (void)vfs; real_vfs->xDlClose(real_vfs, handle); }
static int v_randomness(sqlite3_vfs *vfs, int size, char *out) { (void)vfs; return real_vfs->xRandomness(real_vfs, size, out); }
static int v_sleep(sqlite3_vfs *vfs, int micros) { (void)vfs; return real_vfs->xSleep(real_vfs, micros); }
static int v_current_time(sqlite3_vfs *vfs, double *out) { (void)vfs; return real_vfs->xCurrentTime(real_vfs, out); }
static int v_get_last_error(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, size, out) : 0;
}
static int v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

int batched_wal_register(void) {
    pthread_mutex_lock(&lock);
    if (real_vfs) { pthread_mutex_unlock(&lock); return SQLITE_OK; }
    sqlite3_vfs *wrapped = sqlite3_vfs_find(NULL);
    if (!wrapped) { pthread_mutex_unlock(&lock); return SQLITE_ERROR; }
    if (wrapped->iVersion < 2 || !wrapped->xCurrentTimeInt64) { pthread_mutex_unlock(&lock); return SQLITE_ERROR; }
    batched_vfs = (sqlite3_vfs){
        2, (int)sizeof(struct batched_file) + wrapped->szOsFile, wrapped->mxPathname, 0, BATCHED_WAL_VFS_NAME, 0,
        v_open, v_delete, v_access, v_full_pathname, v_dl_open, v_dl_error, v_dl_sym, v_dl_close,
        v_randomness, v_sleep, v_current_time, v_get_last_error, v_current_time_int64, 0, 0, 0,
    };
    real_vfs = wrapped;  // before the VFS can be found
    int rc = sqlite3_vfs_register(&batched_vfs, 0);
    if (rc != SQLITE_OK) real_vfs = NULL;
    pthread_mutex_unlock(&lock);
    return rc;
}

int batched_wal_counts(sqlite3 *db, long long *writes, long long *flushes, int *buffered) {
    sqlite3_file *file = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) != SQLITE_OK || !file) return 0;
    if (file->pMethods != &methods[0] && file->pMethods != &methods[1] && file->pMethods != &methods[2]) return 0;
    struct batched_file *f = (struct batched_file *)file;
    if (!f->is_wal) return 0;
    *buffered = f->length;
    *writes = f->writes;
    *flushes = f->flushes;
    return 1;
}

// The recording VFS of crash_vfs.h. Every method forwards to the "unix" VFS's; the log is a
// growing array guarded by one mutex (SQLite calls the VFS from several threads).
#include "crash_vfs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/// The kernel's page: the unit a write is logged in.
#define PAGE 4096

static sqlite3_vfs *real_vfs;
static sqlite3_vfs recording_vfs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *directory;
static size_t directory_length;
static int recording;
static struct crash_vfs_op *ops;
static int64_t op_count, op_capacity;
static uint8_t *data;
static int64_t data_size, data_capacity;
static char **files;
static int32_t file_count, file_capacity;

/// An open file: ours first (SQLite allocates szOsFile bytes), the real file after it.
struct recorded_file {
    sqlite3_file base;
    int32_t file;  // -1: not logged
    sqlite3_file *real;
};

static void grow(void **buffer, int64_t *capacity, int64_t needed, size_t unit) {
    if (needed <= *capacity) return;
    int64_t next = *capacity ? *capacity * 2 : 1024;
    while (next < needed) next *= 2;
    *buffer = realloc(*buffer, (size_t)next * unit);
    if (!*buffer) abort();
    *capacity = next;
}

static void append(int32_t kind, int32_t file, int64_t offset, const void *bytes, int64_t length) {
    grow((void **)&ops, &op_capacity, op_count + 1, sizeof(struct crash_vfs_op));
    struct crash_vfs_op op = {kind, file, offset, length, data_size};
    if (bytes && length > 0) {
        grow((void **)&data, &data_capacity, data_size + length, 1);
        memcpy(data + data_size, bytes, (size_t)length);
        data_size += length;
    }
    ops[op_count++] = op;
}

/// The log's number for a path under the directory (made on first sight); -1 otherwise.
/// Called with the lock held.
static int32_t file_number(const char *path) {
    if (!recording || !path || strncmp(path, directory, directory_length) != 0) return -1;
    if (path[directory_length] != '/' && path[directory_length] != 0) return -1;  // /x/run, not /x/run2
    const char *name = path + directory_length;
    while (*name == '/') name++;
    for (int32_t i = 0; i < file_count; i++) {
        if (strcmp(files[i], name) == 0) return i;
    }
    int64_t capacity = file_capacity;
    grow((void **)&files, &capacity, file_count + 1, sizeof(char *));
    file_capacity = (int32_t)capacity;
    files[file_count] = strdup(name);
    return file_count++;
}

static int x_close(sqlite3_file *file) {
    struct recorded_file *f = (struct recorded_file *)file;
    int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    return rc;
}
static int x_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xRead(f->real, buffer, amount, offset);
}
static int x_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    struct recorded_file *f = (struct recorded_file *)file;
    pthread_mutex_lock(&lock);
    int rc = f->real->pMethods->xWrite(f->real, buffer, amount, offset);
    if (rc == SQLITE_OK && f->file >= 0 && recording) {
        // Logged as one write per 4 KiB page of the file it touches: the kernel writes dirty
        // pages back independently, so a power cut may keep any of them. (Baton's batched WAL
        // hands SQLite's frames over in writes of up to 124 KiB.)
        const unsigned char *bytes = buffer;
        for (sqlite3_int64 at = offset, end = offset + amount; at < end;) {
            sqlite3_int64 next = (at / PAGE + 1) * PAGE;
            if (next > end) next = end;
            append(CRASH_VFS_WRITE, f->file, at, bytes + (at - offset), next - at);
            at = next;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
static int x_truncate(sqlite3_file *file, sqlite3_int64 size) {
    struct recorded_file *f = (struct recorded_file *)file;
    pthread_mutex_lock(&lock);
    int rc = f->real->pMethods->xTruncate(f->real, size);
    if (rc == SQLITE_OK && f->file >= 0 && recording) append(CRASH_VFS_TRUNCATE, f->file, size, NULL, 0);
    pthread_mutex_unlock(&lock);
    return rc;
}
static int x_sync(sqlite3_file *file, int flags) {
    struct recorded_file *f = (struct recorded_file *)file;
    // Under the lock, as writes are: no write of another thread can land during the fsync and
    // be logged before the SYNC as if the fsync had covered it.
    pthread_mutex_lock(&lock);
    int rc = f->real->pMethods->xSync(f->real, flags);
    if (rc == SQLITE_OK && f->file >= 0 && recording) append(CRASH_VFS_SYNC, f->file, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
    return rc;
}
static int x_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xFileSize(f->real, size);
}
static int x_lock(sqlite3_file *file, int level) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xLock(f->real, level);
}
static int x_unlock(sqlite3_file *file, int level) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xUnlock(f->real, level);
}
static int x_check_reserved_lock(sqlite3_file *file, int *out) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}
static int x_file_control(sqlite3_file *file, int op, void *arg) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xFileControl(f->real, op, arg);
}
static int x_sector_size(sqlite3_file *file) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xSectorSize(f->real);
}
static int x_device_characteristics(sqlite3_file *file) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}
static int x_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xShmMap(f->real, page, size, extend, out);
}
static int x_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}
static void x_shm_barrier(sqlite3_file *file) {
    struct recorded_file *f = (struct recorded_file *)file;
    f->real->pMethods->xShmBarrier(f->real);
}
static int x_shm_unmap(sqlite3_file *file, int delete_flag) {
    struct recorded_file *f = (struct recorded_file *)file;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}
static int x_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    // No memory-mapped reads: every page goes through xRead, so the log sees what is read too.
    (void)file; (void)offset; (void)amount;
    *out = 0;
    return SQLITE_OK;
}
static int x_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    (void)file; (void)offset; (void)page;
    return SQLITE_OK;
}

static const sqlite3_io_methods methods = {
    3, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
    x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics,
    x_shm_map, x_shm_lock, x_shm_barrier, x_shm_unmap, x_fetch, x_unfetch,
};

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    struct recorded_file *f = (struct recorded_file *)file;
    f->real = (sqlite3_file *)(f + 1);
    memset(f->real, 0, (size_t)real_vfs->szOsFile);
    int existed = 1;
    if (name && (flags & SQLITE_OPEN_CREATE)) {
        int result = 0;
        real_vfs->xAccess(real_vfs, name, SQLITE_ACCESS_EXISTS, &result);
        existed = result;
    }
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    f->base.pMethods = rc == SQLITE_OK ? &methods : 0;
    pthread_mutex_lock(&lock);
    f->file = file_number(name);
    if (rc == SQLITE_OK && f->file >= 0 && !existed) append(CRASH_VFS_CREATE, f->file, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
    return rc;
}
static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    (void)vfs;
    int rc = real_vfs->xDelete(real_vfs, name, sync_dir);
    pthread_mutex_lock(&lock);
    int32_t file = file_number(name);
    if (rc == SQLITE_OK && file >= 0) append(CRASH_VFS_DELETE, file, sync_dir, NULL, 0);
    pthread_mutex_unlock(&lock);
    return rc;
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

int crash_vfs_register(void) {
    pthread_mutex_lock(&lock);
    if (real_vfs) { pthread_mutex_unlock(&lock); return 0; }
    real_vfs = sqlite3_vfs_find("unix");
    if (!real_vfs) { pthread_mutex_unlock(&lock); return 1; }
    recording_vfs = (sqlite3_vfs){
        2, (int)sizeof(struct recorded_file) + real_vfs->szOsFile, real_vfs->mxPathname, 0, "baton-crash-record", 0,
        v_open, v_delete, v_access, v_full_pathname, v_dl_open, v_dl_error, v_dl_sym, v_dl_close,
        v_randomness, v_sleep, v_current_time, v_get_last_error, v_current_time_int64, 0, 0, 0,
    };
    pthread_mutex_unlock(&lock);
    return sqlite3_vfs_register(&recording_vfs, 1);
}

void crash_vfs_start(const char *path) {
    pthread_mutex_lock(&lock);
    free(directory);
    directory = strdup(path);
    directory_length = strlen(directory);
    while (directory_length > 1 && directory[directory_length - 1] == '/') directory[--directory_length] = 0;
    for (int32_t i = 0; i < file_count; i++) free(files[i]);
    file_count = 0;
    op_count = 0;
    data_size = 0;
    recording = 1;
    pthread_mutex_unlock(&lock);
}

void crash_vfs_stop(void) {
    pthread_mutex_lock(&lock);
    recording = 0;
    pthread_mutex_unlock(&lock);
}

void crash_vfs_mark(int64_t number) {
    pthread_mutex_lock(&lock);
    if (recording) append(CRASH_VFS_MARK, -1, number, NULL, 0);
    pthread_mutex_unlock(&lock);
}

int64_t crash_vfs_op_count(void) { return op_count; }
struct crash_vfs_op crash_vfs_op_at(int64_t index) { return ops[index]; }
const uint8_t *crash_vfs_data(void) { return data; }
int32_t crash_vfs_file_count(void) { return file_count; }
const char *crash_vfs_file_name(int32_t file) { return files[file]; }

// A recording SQLite VFS for baton-crash (docs/reliability.md, "Power cuts"): registered as
// the default VFS, it passes every call to the "unix" VFS and, while recording, logs each
// write (split at the file's 4 KiB pages), truncate, sync, create and delete of the files under
// one directory, in order, with the bytes written. The harness marks acknowledgements in the same log, then builds the disk
// states a power cut could leave from it.
#ifndef BATON_CRASH_VFS_H
#define BATON_CRASH_VFS_H

#include <stdint.h>

enum crash_vfs_kind {
    CRASH_VFS_WRITE = 1,
    CRASH_VFS_TRUNCATE = 2,
    CRASH_VFS_SYNC = 3,
    CRASH_VFS_CREATE = 4,
    CRASH_VFS_DELETE = 5,
    CRASH_VFS_MARK = 6,
};

/// One logged operation. For a write, `offset` and `length` place the bytes, which are
/// `crash_vfs_data() + data`; for a truncate, `offset` is the new size; for a mark, `offset`
/// is the harness's number. `file` indexes `crash_vfs_file_name`.
struct crash_vfs_op {
    int32_t kind;
    int32_t file;
    int64_t offset;
    int64_t length;
    int64_t data;
};

/// Registers the recording VFS as SQLite's default (once; later calls do nothing). 0: done.
int crash_vfs_register(void);
/// Starts logging the files under `directory` (a new, empty log). Only files opened after
/// the start are logged, and a file must be closed before the next start: the harness opens
/// its store after `start` and closes it before `stop`.
void crash_vfs_start(const char *directory);
/// Stops logging; the log stays readable until the next start.
void crash_vfs_stop(void);
/// Appends a mark (an acknowledgement the harness received) to the log.
void crash_vfs_mark(int64_t number);
int64_t crash_vfs_op_count(void);
struct crash_vfs_op crash_vfs_op_at(int64_t index);
const uint8_t *crash_vfs_data(void);
int32_t crash_vfs_file_count(void);
/// The file's name relative to the recorded directory.
const char *crash_vfs_file_name(int32_t file);

#endif

// glibc's posix_spawn extensions (2.29, 2.34) that Glibc's Swift module does not export: spawn.h
// declares them only under _GNU_SOURCE. Declared here as spawn.h does, for the tests' ChildProcess.
#include <spawn.h>

extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *__restrict actions, const char *__restrict path);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

import CSpawn
import Glibc

/// The `posix_spawn` call behind `ChildProcess`, with every C structure it needs made and
/// destroyed here. The child gets, as from Foundation's `Process` on Linux, a process group
/// of its own (a Ctrl-C at the runner's terminal reaches neither a postmaster nor the
/// cluster's watchdog, which must outlive the runner) and descriptors 0, 1 and 2 only; and,
/// which `Process` did not give it, an empty signal mask and every signal at its default
/// disposition (a `baton` that inherited a blocked SIGTERM could not be stopped).
enum PosixSpawn {
    /// One standard stream of the child: `target` (0, 1 or 2) becomes a copy of the parent's
    /// `source`, or /dev/null when `source` is nil.
    struct Redirection {
        var target: Int32
        var source: Int32?
        var childReads: Bool
    }

    /// Starts `executable` (a path: no PATH search) with `arguments` after argv[0], in
    /// `directory` when given, with `environment` (nil: the test process's own) and the
    /// standard streams `redirections` name (any other of 0, 1, 2 is inherited); returns its PID.
    /// - Throws: `ChildProcessError`; then no child exists.
    static func spawn(_ executable: String, arguments: [String], environment: [String: String]?, directory: String?,
                      redirections: [Redirection]) throws(ChildProcessError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        try check("posix_spawn_file_actions_init", posix_spawn_file_actions_init(&actions))
        defer { posix_spawn_file_actions_destroy(&actions) }
        // In order 0, 1, 2: a source among 0-2 is read before a later redirection replaces it.
        for redirection in redirections {
            if let source = redirection.source {
                try check("posix_spawn_file_actions_adddup2", posix_spawn_file_actions_adddup2(&actions, source, redirection.target))
            } else {
                let mode = redirection.childReads ? O_RDONLY : O_WRONLY
                try check("posix_spawn_file_actions_addopen", posix_spawn_file_actions_addopen(&actions, redirection.target, "/dev/null", mode, 0))
            }
        }
        // After the copies: no test hands a child any descriptor beyond 0-2, and a child
        // holding the write end of another child's pipe would keep its reader from EOF.
        try check("posix_spawn_file_actions_addclosefrom_np", posix_spawn_file_actions_addclosefrom_np(&actions, 3))
        if let directory {
            try check("posix_spawn_file_actions_addchdir_np", posix_spawn_file_actions_addchdir_np(&actions, directory))
        }

        var attributes = posix_spawnattr_t()
        try check("posix_spawnattr_init", posix_spawnattr_init(&attributes))
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        try check("posix_spawnattr_setsigmask", posix_spawnattr_setsigmask(&attributes, &noSignals))
        try check("posix_spawnattr_setsigdefault", posix_spawnattr_setsigdefault(&attributes, &allSignals))
        try check("posix_spawnattr_setpgroup", posix_spawnattr_setpgroup(&attributes, 0))
        let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP
        try check("posix_spawnattr_setflags", posix_spawnattr_setflags(&attributes, Int16(flags)))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        // glibc's posix_spawn reports a failed exec (ENOENT, EACCES) as its result.
        let result = if let envp {
            posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        } else {
            posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        guard result == 0 else { throw .spawnFailed(executable: executable, errno: result) }
        return pid
    }

    private static func check(_ call: String, _ result: Int32) throws(ChildProcessError) {
        guard result == 0 else { throw .setupFailed(call: call, errno: result) }
    }
}

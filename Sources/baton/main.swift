import BatonCLI
import Glibc

// Start from a clean signal mask: a parent that spawned us from a thread with signals blocked
// (libdispatch workers block them) would otherwise leave SIGTERM and SIGINT pending forever.
// `serve` blocks exactly the signals it waits for with sigwait.
var nothingBlocked = sigset_t()
sigemptyset(&nothingBlocked)
sigprocmask(SIG_SETMASK, &nothingBlocked, nil)

exit(BatonCommand.run(Array(CommandLine.arguments.dropFirst()), output: StandardStreams()).rawValue)

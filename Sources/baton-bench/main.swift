// baton-bench: store-level throughput of exchange and verify, with raw-SQLite baselines
// measured in the same run. Run on a release build:
//   swift run -c release baton-bench [--chains 100000] [--runs 5] [--seconds 2] [--dir /tmp]
import Glibc

exit(Bench.main(Array(CommandLine.arguments.dropFirst())))

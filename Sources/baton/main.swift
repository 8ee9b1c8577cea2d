import BatonCLI
import Glibc

exit(BatonCommand.run(Array(CommandLine.arguments.dropFirst()), output: StandardStreams()).rawValue)

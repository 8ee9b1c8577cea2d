import BatonCLI
import Glibc

var streams = StandardStreams()
exit(BatonCommand.run(Array(CommandLine.arguments.dropFirst()), output: &streams).rawValue)

// baton-sim: the deterministic simulation of the shipped client and server (docs/reliability.md).
import BatonSimulation
import Foundation

SimCommand.main(CommandLine.arguments)

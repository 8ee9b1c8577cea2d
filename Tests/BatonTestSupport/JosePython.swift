import Foundation

/// The interpreter of the virtual environment with joserfc (PyPI): `TEST_JOSE_PYTHON`, which
/// ./scripts/test sets from ./scripts/jose-venv, or .venv-tools/ if that script ran before.
package let josePython: String? = {
    if let path = ProcessInfo.processInfo.environment["TEST_JOSE_PYTHON"] { return path }
    let local = repositoryRoot + "/.venv-tools/bin/python"
    guard FileManager.default.isExecutableFile(atPath: local),
          let check = try? runCommand(local, ["-c", "import joserfc"]), check.status == 0 else { return nil }
    return local
}()

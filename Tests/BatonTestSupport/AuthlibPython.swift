import Foundation

/// The interpreter of the virtual environment with Authlib, requests and PyYAML (PyPI):
/// `TEST_AUTHLIB_PYTHON`, which ./scripts/test sets from ./scripts/authlib-venv, or .venv-tools/
/// if that script ran before.
package let authlibPython: String? = {
    if let path = ProcessInfo.processInfo.environment["TEST_AUTHLIB_PYTHON"] { return path }
    let local = repositoryRoot + "/.venv-tools/bin/python"
    guard FileManager.default.isExecutableFile(atPath: local),
          let check = try? runCommand(local, ["-c", "import authlib, requests, yaml"]), check.status == 0 else { return nil }
    return local
}()

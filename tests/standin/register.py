"""Registers the stand-in filesystem, runtime and tool (the registration lines a new one adds,
nothing else), then runs dfslab's command line with this process's arguments. dfslab is imported
whole first, as a plugin loaded after it would be: the spec's model, the fault table and the
runtimes an experiment may list are read from the registry when asked, not frozen at import."""

import dfslab.cli  # noqa: F401 (every module of dfslab loaded before anything is registered)
from dfslab import registry, workloads

registry.FILESYSTEMS["standin"] = "standin_fs"
registry.RUNTIMES["standin"] = "standin_runtime:StandInRuntime"
workloads.WORKLOADS["ddwrite"] = "standin_tool:DdWrite"

if __name__ == "__main__":
    from dfslab.cli import main
    main()

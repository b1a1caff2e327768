"""Registers the stand-in filesystem, runtime and tool (the registration lines a new one adds,
nothing else), then runs dfslab's command line with this process's arguments."""

from dfslab import registry

registry.FILESYSTEMS["standin"] = "standin_fs"
registry.RUNTIMES["standin"] = "standin_runtime:StandInRuntime"

from dfslab import workloads  # noqa: E402 (after the filesystem's line: the spec is built from the registry)

workloads.WORKLOADS["ddwrite"] = "standin_tool:DdWrite"

if __name__ == "__main__":
    from dfslab.cli import main
    main()

"""symphony-emu: a packet-level emulator of Symphony (arXiv 2604.16880)."""

import os as _os

# The controller holds gRPC channels (P4Runtime) while it forks Mininet node shells and
# workers; gRPC's fork handlers would then restart its pollers in each child between fork
# and exec and kill it ("epoll_wait error: Bad file descriptor"). No child uses gRPC.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import hostapps.compiled as _compiled  # noqa: E402, F401  (compiled hot modules only when current)

# Augmenting declarations of emu/vtime/hosts.py for the optional compiled build (Cython's pure Python
# mode, hostapps.compiled): SimRank, the per-packet driver of a rank, as an extension type with C fields
# (its loop and core typed, so that their fields and cpdef methods are C accesses and calls). The .py
# stays the reference. ``__dict__`` keeps subclasses' attributes (emu.vtime.hostcost.CostedSimRank) and
# the methods they override (on_datagram, _wake, _barrier_wake: def methods, looked up as before).
# Times: the loop's integer ns as 64-bit ints; a wake-up time that may be None stays an object.

cimport cython
from emu.vtime.events cimport EventLoop
from emu.vtime.frames cimport FrameBuilder
from emu.vtime.network cimport HostLink
from hostapps.rank cimport RankWorker
from hostapps.transport cimport Outgoing

cdef class SimRank:
    cdef dict __dict__
    cdef public object spec, host, on_end, port, channel_ports, wake_at, _mode
    cdef public object _feed, _poll, _next_timer
    cdef public EventLoop loop
    cdef public RankWorker core
    cdef public dict ip_of, rank_of, port_of, _parked
    cdef public list _to
    cdef public bint ended
    cdef public long long _written

    @cython.locals(o=Outgoing, ns=cython.longlong, nowns=cython.longlong, core=RankWorker, tf=cython.double,
                   x=cython.double, to=list, link=HostLink, builder=FrameBuilder)
    cpdef _service(self, double now)
    @cython.locals(loop=EventLoop, parked=dict)
    cpdef _arm(self, long long ns)

cdef Py_ssize_t _PAYLOAD_OFFSET
cdef long long _CTH_PORT

cpdef _receive(dict ranks, bytes frame)

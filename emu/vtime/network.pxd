# Cython declarations for network.py (pure-Python mode: the .py stays the reference and runs unchanged
# without Cython; scripts/build_compiled.py compiles the .py with these types). Every attribute stays
# public; SimSwitch stays subclassable in Python (emu.vtime.hostcost.CostedSimSwitch).

cimport cython
from emu.embedded.core cimport SwitchCore
from emu.embedded.link cimport FifoLink, ceil_tick
from emu.vtime.events cimport EventLoop

@cython.final
cdef class HostLink:
    cdef public EventLoop loop
    cdef public FifoLink link
    cdef public object deliver

    @cython.locals(depart=object, loop=EventLoop)
    cpdef send(self, object frame)

cdef class SimSwitch:
    cdef public object name
    cdef public SwitchCore core
    cdef public EventLoop loop
    cdef public dict peers
    cdef public object wake_at
    cdef public object _receive
    cdef public object _poll
    cdef public object _deadline
    cdef public object _wake_fn

    @cython.locals(now=cython.longlong, core=SwitchCore, out=list, loop=EventLoop)
    cpdef _wake(self, object t)
    @cython.locals(now=cython.longlong, core=SwitchCore, loop=EventLoop)
    cpdef _arrive(self, long long port, object frame)
    @cython.locals(tc=cython.longlong)
    cdef inline _rearm(self, EventLoop loop, SwitchCore core, long long now)

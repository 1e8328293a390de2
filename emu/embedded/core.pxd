# Cython declarations for core.py (pure-Python mode: the .py stays the reference and runs unchanged
# without Cython; scripts/build_compiled.py compiles the .py with these types). Attributes that
# existed as Python attributes stay public.

cimport cython
from emu.embedded.runtime cimport IngressResult, Pipeline
from emu.embedded.tm cimport EgressStage, TrafficManager

cdef class SwitchCore(EgressStage):
    cdef public object pipeline
    cdef public long long ticks_per_us
    cdef public long long max_frame_bytes
    cdef public TrafficManager tm
    cdef public object _ports
    cdef public bytes _portmask
    cdef public list _rx
    cdef public list _tx
    cdef public dict _drops
    cdef public dict io_lag
    cdef public object io_lag_max_us
    cdef public object _log
    cdef public dict _pstats
    cdef public object _parser_key
    cdef public list _pending
    cdef public object internal_error
    cdef public object _egress_at
    cdef public Pipeline _cpipe

    @cython.locals(n=Py_ssize_t)
    cpdef receive(self, long long port, object frame, long long now_us)
    @cython.locals(tm=TrafficManager, n=Py_ssize_t, tpu=cython.longlong, out_port=cython.longlong, cp=Pipeline,
                   ist=IngressResult)
    cpdef _ingress(self, object frame, long long port, long long now_us, object copy)
    @cython.locals(tpu=cython.longlong, now_tick=cython.longlong, cp=Pipeline)
    cpdef object _run_egress(self, long long port, object st, long long enq_qdepth, long long deq_qdepth,
                             long long deq_timedelta_us, long long enq_timestamp_us, long long now_us)
    @cython.locals(tm=TrafficManager, tx=list, port=Py_ssize_t)
    cpdef list poll(self, long long now_us)

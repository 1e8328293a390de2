# Cython declarations for tm.py (pure-Python mode: the .py stays the reference and runs unchanged
# without Cython; scripts/build_compiled.py compiles the .py with these types). Attributes that
# existed as Python attributes stay public; times are doubles (Python floats), counters 64-bit.

cimport cython
from emu.embedded.link cimport FifoLink, ceil_tick
from emu.vtime.events cimport Heap, heap_pop, heap_push

cdef double _INF  # math.inf: compared as a C double

cdef class EgressStage:
    cpdef object _run_egress(self, long long port, object item, long long enq_qdepth, long long deq_qdepth,
                             long long deq_timedelta_us, long long enq_timestamp_us, long long now_us)

@cython.final
cdef class TrafficManager:
    cdef public dict _ports
    cdef public list _links
    cdef public long long ticks_per_us
    cdef public long long wire_overhead_bytes
    cdef public object qdepth_unit
    cdef public object _service
    cdef public EgressStage _stage
    cdef public list _waiting
    cdef public double _next_service
    cdef public Heap _departures
    cdef public long long _seq
    cdef public list _ready
    cdef public object _ready_at

    @cython.locals(p=FifoLink, depth=Py_ssize_t, stage=EgressStage, links=list)
    cpdef object enqueue(self, long long port, object item, long long now_us)
    @cython.locals(p=FifoLink, start=double, stage=EgressStage, links=list, dep=double)
    cpdef object enqueue_service(self, long long port, object item, long long now_us)
    @cython.locals(waiting=list)
    cpdef service_until(self, long long now_us)
    @cython.locals(p=FifoLink, stage=EgressStage, start=double, deq_qdepth=cython.longlong, enq_us=cython.longlong, start_us=cython.longlong,
                   enq_qdepth=cython.longlong, units=cython.longlong, waiting=list, due=list, free=double,
                   served=Py_ssize_t, deps=Heap, links=list, dep=double, port=cython.longlong)
    cdef _service_ports(self, long long now_us)
    @cython.locals(p=FifoLink, deps=Heap, waiting=list, out=list, links=list, port=cython.longlong)
    cpdef list due(self, long long now_us)
    @cython.locals(t=double, deps=Heap)
    cpdef object next_deadline_us(self)

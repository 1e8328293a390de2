cimport cython

# Cython declarations for link.py (pure-Python mode: the .py stays the reference and runs unchanged
# without Cython; scripts/build_compiled.py compiles the .py with these types). Every attribute is
# public (read and written from Python as before); C types only where the values provably fit:
# counters and tick counts in 64 bits, times in doubles (Python floats are C doubles).

@cython.locals(c=cython.longlong)
cpdef long long ceil_tick(double t) noexcept

@cython.final
cdef class FifoLink:
    cdef public object config
    cdef public long long ticks_per_us
    cdef public long long wire_overhead_bytes
    cdef public double ticks_per_byte
    cdef public long long delay
    cdef public double depth_limit
    cdef public bint direct
    cdef public object queue
    cdef public long long units
    cdef public object starts
    cdef public double free_at
    cdef public long long tail_drops
    cdef public long long max_qdepth
    cdef public long long enqueued
    cdef public long long serviced
    cdef public long long pending

    cpdef set_config(self, config)
    cpdef double serialise(self, double start, long long nbytes)
    @cython.locals(f=double, start=double, n=Py_ssize_t)
    cpdef object transmit(self, long long nbytes, long long now)
    cpdef bint in_flight(self, long long now)

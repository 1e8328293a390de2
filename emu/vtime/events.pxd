# Cython declarations for events.py (pure-Python mode: the .py stays the reference and runs unchanged
# without Cython; scripts/build_compiled.py compiles the .py with these types). Times are integer
# nanoseconds (64 bits: 292 years); every attribute stays public.

cimport cython

cdef class EventLoop:
    cdef public long long now
    cdef public long long events
    cdef public list _heap
    cdef public long long seq
    cdef public bint _halt

    cpdef at(self, long long t, object fn, object arg=*)
    @cython.locals(heap=list, n=cython.longlong, t=cython.longlong, lim=cython.longlong, bounded=cython.bint)
    cpdef run(self, object until=*, object stop=*, long long check_every=*, object on_check=*)

# Cython declarations for events.py (pure-Python mode: the .py stays the reference and runs unchanged
# without Cython; scripts/build_compiled.py compiles the .py with these types). Times are integer
# nanoseconds (64 bits); every attribute stays public. The heaps compare times as C doubles
# (exact for ints below 2**53 ns, 104 days) and sequence numbers as 64-bit ints.

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_SET_ITEM
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdlib cimport free, realloc

cdef bint _TYPED

# the (t, seq) of one entry of Heap.items, at the same index
cdef struct _Key:
    double t
    long long seq
ctypedef _Key* _KeyPtr

cdef inline _Key* _grow(_Key* keys, Py_ssize_t n) except NULL:
    """``keys`` reallocated to ``n`` entries (MemoryError when it cannot be)."""
    cdef _Key* k = <_Key*> realloc(keys, n * sizeof(_Key))
    if k == NULL:
        raise MemoryError()
    return k

# the heaps' list moves (compiled only): their indices are the heap's own (0 <= i < len), so no
# bounds or sign checks
cdef inline object _item(list heap, Py_ssize_t i):
    """``heap[i]``."""
    return <object> PyList_GET_ITEM(heap, i)

cdef inline void _put(list heap, Py_ssize_t i, object v) noexcept:
    """``heap[i] = v``."""
    cdef PyObject* old = PyList_GET_ITEM(heap, i)
    Py_INCREF(v)
    PyList_SET_ITEM(heap, i, v)
    Py_XDECREF(old)

@cython.final
cdef class Heap:
    cdef public list items
    cdef _Key* _keys
    cdef Py_ssize_t _cap

    cpdef double first(self) except? -1
    @cython.locals(heap=list, keys=_KeyPtr, i=Py_ssize_t)
    cpdef heapify(self)
    cpdef clear(self)
    cpdef void push(self, tuple entry) except *
    @cython.locals(heap=list, n=Py_ssize_t)
    cpdef void push_key(self, tuple entry, double t, long long seq) except *
    @cython.locals(heap=list, keys=_KeyPtr, last=tuple, top=tuple, end=Py_ssize_t, pos=Py_ssize_t,
                   child=Py_ssize_t, right=Py_ssize_t, lt=cython.double, lseq=cython.longlong,
                   ct=cython.double, rt=cython.double)
    cpdef tuple pop(self)
    @cython.locals(heap=list, keys=_KeyPtr, up=Py_ssize_t, pt=cython.double)
    cdef inline void _settle(self, Py_ssize_t pos, tuple entry, double t, long long seq) noexcept

cdef class EventLoop:
    cdef public long long now
    cdef public long long events
    cdef public Heap _heap
    cdef public long long seq
    cdef public bint _halt
    cdef public Py_ssize_t remove_above

    cpdef at(self, long long t, object fn, object arg=*)
    @cython.locals(tt=cython.longlong)
    cpdef push(self, object t, object fn, object arg=*)
    cpdef push_seq(self, long long t, long long seq, object fn, object arg=*)
    @cython.locals(heap=Heap, items=list, n=cython.longlong, t=cython.longlong, lim=cython.longlong,
                   bounded=cython.bint)
    cpdef run(self, object until=*, object stop=*, long long check_every=*, object on_check=*)

cpdef void heap_push(list heap, tuple entry) except *
@cython.locals(last=tuple, top=tuple, a=tuple, b=tuple, at=cython.double, bt=cython.double,
               end=Py_ssize_t, pos=Py_ssize_t, child=Py_ssize_t, right=Py_ssize_t)
cpdef tuple heap_pop(list heap)
@cython.locals(entry=tuple, parent=tuple, t=cython.double, seq=cython.longlong, pt=cython.double,
               up=Py_ssize_t)
cdef void _sift_down(list heap, Py_ssize_t start, Py_ssize_t pos) except *

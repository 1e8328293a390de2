# Augmenting declarations of hostapps/collectives.py for the optional compiled build (Cython's pure
# Python mode, hostapps.compiled): the ring collective's per-packet state as extension types with
# typed fields. The .py stays the reference. Ranks, steps, chunk and slice indices and byte offsets
# fit 64-bit ints (Python's floor modulo is kept: cdivision is off); times are doubles in both paths.
# The data-model hooks a Python subclass overrides (the tests' faulty collectives: _slice_payload,
# _apply_slice) are cpdef; _store and _new_recv (per packet, per step) are cdef, overridden only by
# DigestRingCollective, an extension type too.

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.memoryview cimport PyMemoryView_GET_BUFFER
from libc.string cimport memcmp

cdef bint _TYPED


cdef inline int _nonzero_c(object view, Py_ssize_t a, Py_ssize_t b, bytes zeros) except -2:
    """``_nonzero(view[a:b])`` (collectives.py) as 1 or 0, compared with ``zeros`` (a bytes of zeros) in
    C, for a bytes or a one-dimensional contiguous memoryview of 1-byte items and ``0 <= a``, ``0 <= b``;
    -1 for anything else (the caller slices)."""
    cdef Py_buffer buf
    cdef const char* p
    cdef Py_ssize_t n, k, z = PyBytes_GET_SIZE(zeros)
    cdef int r = 0
    if a < 0 or b < 0:
        return -1
    if type(view) is bytes:
        p = PyBytes_AS_STRING(view)
        n = PyBytes_GET_SIZE(view)
    elif type(view) is memoryview:
        if PyMemoryView_GET_BUFFER(view).ndim != 1 or PyMemoryView_GET_BUFFER(view).itemsize != 1:
            return -1
        try:
            PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)
        except Exception:  # (released, not contiguous)
            return -1
        p = <const char*> buf.buf
        n = buf.len
    else:
        return -1
    if b > n:
        b = n
    while a < b:
        k = b - a if b - a < z else z
        if memcmp(p + a, PyBytes_AS_STRING(zeros), k) != 0:
            r = 1
            break
        a += k
    if type(view) is memoryview:
        PyBuffer_Release(&buf)
    return r


cpdef bint _nonzero_in(object view, Py_ssize_t a, Py_ssize_t b) except -1

cdef long long _STEP_MOD, _ITEM

@cython.locals(a=cython.longlong, b=cython.longlong, mid=cython.longlong)
cdef long long _slice_at(tuple starts, long long lo) except? -1
cdef bint _sent_all(list sent, tuple steps, long long j) except -1

cdef class _RecvStep:
    cdef public object buf
    cdef public list got, complete, applied
    cdef public bint seen
    cdef public long long napplied

cdef class RingCollective:
    cdef dict __dict__  # instance attributes beyond these (tests wrap a collective's poll)
    cdef public object kind
    cdef public long long rank, nranks, step_base, slices, channel, left, right, nsteps, _nended
    cdef public double step_timeout, _last_rx
    cdef public tuple _chunks, _slices, _slice_byte_starts
    cdef public list _plan, _hazards, _sent, _recv, _starts, _ends, _outbox
    cdef public set _waiting
    cdef public bint _started, done, _copy
    cdef public object error, result
    cdef object _buf

    @cython.locals(diff=cython.longlong, i=cython.longlong, chunk=cython.longlong, a=cython.longlong,
                   b=cython.longlong, nbytes=cython.longlong, lo=cython.longlong, hi=cython.longlong,
                   j=cython.longlong, s_lo=cython.longlong, s_hi=cython.longlong, rs=_RecvStep,
                   starts=tuple, slices=tuple, step=cython.longlong, src=cython.longlong)
    cpdef bint on_delivery(self, object d, double now) except -1
    cpdef list poll(self, double now)
    cpdef object next_timer(self)
    cdef _RecvStep _new_recv(self, long long chunk, long long nbytes)
    cdef _store(self, _RecvStep rs, long long chunk, long long lo, object payload)
    @cython.locals(a=cython.longlong, sa=cython.longlong, sb=cython.longlong)
    cpdef object _slice_payload(self, long long chunk, long long j)
    @cython.locals(a=cython.longlong, sa=cython.longlong, sb=cython.longlong)
    cpdef _apply_slice(self, _RecvStep rs, long long chunk, long long j, bint reduce)
    @cython.locals(chunk=cython.longlong, sa=cython.longlong, sb=cython.longlong, last=cython.bint)
    cdef _send_slice(self, long long i, long long j, double now)
    @cython.locals(changed=cython.bint, i=cython.longlong, j=cython.longlong)
    cdef _progress(self, double now)
    @cython.locals(chunk=cython.longlong, reduce=cython.bint, rs=_RecvStep)
    cdef _apply(self, long long i, long long j, double now)

cdef class DigestRingCollective(RingCollective):
    cdef public long long _n_elements, _width
    cdef public object _tokens, _rec, _recq

    @cython.locals(hi=cython.longlong, starts=tuple, n=cython.longlong, j=cython.longlong, pos=cython.longlong,
                   buf=object, r_lo=cython.longlong, a=cython.longlong, b=cython.longlong, k=cython.longlong)
    cdef _store(self, _RecvStep rs, long long chunk, long long lo, object payload)
    cdef _RecvStep _new_recv(self, long long chunk, long long nbytes)
    @cython.locals(k=cython.longlong)
    cpdef object _slice_payload(self, long long chunk, long long j)
    @cython.locals(k=cython.longlong)
    cpdef _apply_slice(self, _RecvStep rs, long long chunk, long long j, bint reduce)

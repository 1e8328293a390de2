# Augmenting declarations of hostapps/wire.py for the optional compiled build (Cython's pure Python
# mode, hostapps.compiled): the CTH codec's per-packet functions as C-callable functions with typed
# locals. The .py stays the reference. Field values stay Python ints where a caller may pass any int
# (an out-of-range one must still raise WireError, not OverflowError).

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.memoryview cimport PyMemoryView_GET_BUFFER

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

cdef bint _TYPED


cdef inline bytes _pack_c(long long version, long long ctype, long long flags, long long job_id, long long channel,
                          long long step, long long src, long long dst, long long psn, long long offset):
    """_pack's 16 bytes (wire.py: ``_STRUCT.pack(((version & 0xF) << 4) | (ctype & 0xF), flags, job_id, channel,
    step & 0xFFFF, src, dst, psn >> 8, (psn & 0xFF) << 24 | offset)``) written in C: every value in its
    field's range (the caller checks; ``psn`` < 2**24, ``offset`` < 2**24; ``&`` of a negative C integer is
    Python's)."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 16)
    cdef unsigned char* q = <unsigned char*> PyBytes_AS_STRING(out)
    q[0] = ((version & 0xF) << 4) | (ctype & 0xF)
    q[1] = flags
    q[2] = job_id
    q[3] = channel
    q[4] = (step >> 8) & 0xff
    q[5] = step & 0xff
    q[6] = (src >> 8) & 0xff
    q[7] = src & 0xff
    q[8] = (dst >> 8) & 0xff
    q[9] = dst & 0xff
    q[10] = (psn >> 16) & 0xff
    q[11] = (psn >> 8) & 0xff
    q[12] = psn & 0xff
    q[13] = (offset >> 16) & 0xff
    q[14] = (offset >> 8) & 0xff
    q[15] = offset & 0xff
    return out


cdef inline tuple _unpack_c(object datagram, long long version):
    """unpack_header's tuple of the memoryview ``datagram`` (wire.py), its fields read in C: None unless
    the view is one-dimensional of 1-byte items (so that ``datagram[CTH_LEN:]`` is ``memoryview(datagram)
    [CTH_LEN:]``), contiguous, at least 16 bytes (CTH_LEN) and of ``version`` (the caller checks the type)."""
    cdef Py_buffer b
    cdef const unsigned char* p
    cdef Py_buffer* mb = PyMemoryView_GET_BUFFER(datagram)
    try:
        PyObject_GetBuffer(datagram, &b, PyBUF_SIMPLE)  # (released, not contiguous: the caller's path raises)
    except Exception:
        return None
    p = <const unsigned char*> b.buf
    if b.len < 16 or mb.ndim != 1 or mb.itemsize != 1 or (p[0] >> 4) != version:
        PyBuffer_Release(&b)
        return None
    cdef long long psn_hi = (p[10] << 8) | p[11]
    cdef long long low = (<long long> p[12] << 24) | (p[13] << 16) | (p[14] << 8) | p[15]
    out = (p[0] & 0xF, p[1], p[2], p[3], (p[4] << 8) | p[5], (p[6] << 8) | p[7], (p[8] << 8) | p[9],
           (psn_hi << 8) | (low >> 24), low & 0xFFFFFF, datagram[16:])
    PyBuffer_Release(&b)
    return out

cpdef bytes _pack(object ctype, object job_id, object step, object src_rank, object dst_rank, object psn,
                  object offset, object flags, object channel, object version)
cpdef bytes pack_header(object ctype, object job_id, object step, object src_rank, object dst_rank, object psn=*,
                        object offset=*, object flags=*, object channel=*)
@cython.locals(vt=cython.longlong, version=cython.longlong, ptype=cython.longlong, psn_hi=cython.longlong,
               low=cython.longlong)
cpdef tuple unpack_header(object datagram)

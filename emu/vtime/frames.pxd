# Augmenting declarations of emu/vtime/frames.py for the optional compiled build (Cython's pure Python
# mode, hostapps.compiled): FrameBuilder as an extension type, its per-packet build with C integer
# locals (lengths, the checksum's 16-bit word sums: at most a few words of 16 bits, far from 64 bits).
# The .py stays the reference.

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy

cdef bint _TYPED
cdef long long _IPUDP_LEN


cdef inline bytes _frame_c(bytes eth, bytes src_ip, bytes dip, long long tos, long long total, long long cks,
                           long long sport, long long dport, bytes datagram):
    """``eth + _IPUDP.pack(0x45, tos, total, 0, 0x4000, 64, 17, cks, src_ip, dip, sport, dport, total - 20, 0)
    + datagram`` (frames.py's FrameBuilder.build_to) written in C: ``src_ip`` and ``dip`` of 4 bytes, the
    16-bit values in range (the caller checks)."""
    cdef Py_ssize_t ne = PyBytes_GET_SIZE(eth), nd = PyBytes_GET_SIZE(datagram)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, ne + 28 + nd)
    cdef unsigned char* q = <unsigned char*> PyBytes_AS_STRING(out)
    cdef long long ulen = total - 20
    memcpy(q, PyBytes_AS_STRING(eth), ne)
    q += ne
    q[0] = 0x45
    q[1] = tos & 0xff
    q[2] = (total >> 8) & 0xff
    q[3] = total & 0xff
    q[4] = 0
    q[5] = 0
    q[6] = 0x40
    q[7] = 0
    q[8] = 64
    q[9] = 17
    q[10] = (cks >> 8) & 0xff
    q[11] = cks & 0xff
    memcpy(q + 12, PyBytes_AS_STRING(src_ip), 4)
    memcpy(q + 16, PyBytes_AS_STRING(dip), 4)
    q[20] = (sport >> 8) & 0xff
    q[21] = sport & 0xff
    q[22] = (dport >> 8) & 0xff
    q[23] = dport & 0xff
    q[24] = (ulen >> 8) & 0xff
    q[25] = ulen & 0xff
    q[26] = 0
    q[27] = 0
    memcpy(q + 28, PyBytes_AS_STRING(datagram), nd)
    return out


cdef class FrameBuilder:
    cdef public bytes src_ip
    cdef public dict _dst

    cpdef tuple dest(self, object dst_ip)
    cpdef bytes build(self, object dst_ip, object sport, object dport, object datagram, long long ecn)
    @cython.locals(n=cython.longlong, total=cython.longlong, tos=cython.longlong, s=cython.longlong,
                   words=cython.longlong, eth=bytes, dip=bytes)
    cpdef bytes build_to(self, tuple dest, object sport, object dport, object datagram, long long ecn)

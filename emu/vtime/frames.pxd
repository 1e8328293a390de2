# Augmenting declarations of emu/vtime/frames.py for the optional compiled build (Cython's pure Python
# mode, hostapps.compiled): FrameBuilder as an extension type, its per-packet build with C integer
# locals (lengths, the checksum's 16-bit word sums: at most a few words of 16 bits, far from 64 bits).
# The .py stays the reference.

cimport cython

cdef class FrameBuilder:
    cdef public bytes src_ip
    cdef public dict _dst

    cpdef tuple dest(self, object dst_ip)
    cpdef bytes build(self, object dst_ip, object sport, object dport, object datagram, long long ecn)
    @cython.locals(n=cython.longlong, total=cython.longlong, tos=cython.longlong, s=cython.longlong,
                   words=cython.longlong, eth=bytes, dip=bytes)
    cpdef bytes build_to(self, tuple dest, object sport, object dport, object datagram, long long ecn)

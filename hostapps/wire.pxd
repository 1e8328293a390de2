# Augmenting declarations of hostapps/wire.py for the optional compiled build (Cython's pure Python
# mode, hostapps.compiled): the CTH codec's per-packet functions as C-callable functions with typed
# locals. The .py stays the reference. Field values stay Python ints where a caller may pass any int
# (an out-of-range one must still raise WireError, not OverflowError).

cimport cython

cpdef bytes _pack(object ctype, object job_id, object step, object src_rank, object dst_rank, object psn,
                  object offset, object flags, object channel, object version)
cpdef bytes pack_header(object ctype, object job_id, object step, object src_rank, object dst_rank, object psn=*,
                        object offset=*, object flags=*, object channel=*)
@cython.locals(vt=cython.longlong, version=cython.longlong, ptype=cython.longlong, psn_hi=cython.longlong,
               low=cython.longlong)
cpdef tuple unpack_header(object datagram)

# Cython's augmenting declarations for runtime.py (pure-Python mode: the .py is unchanged and stays
# the reference; scripts/build_compiled.py compiles the two together, hostapps.compiled.source_digest
# covers both). IngressResult, one per packet, becomes an extension type whose fields are C members
# (no per-field attribute lookup in __init__), with a free list of recycled objects.
cimport cython


@cython.freelist(256)
cdef class IngressResult:
    cdef public object egress_spec, mcast_grp, packet_length, state, port, rid, itype, ops, frame, now_us, depth

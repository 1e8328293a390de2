# Cython's augmenting declarations for runtime.py (pure-Python mode: the .py is unchanged and stays
# the reference; scripts/build_compiled.py compiles the two together, hostapps.compiled.source_digest
# covers both). IngressResult, one per packet, becomes an extension type whose fields are C members
# (no per-field attribute lookup in __init__), with a free list of recycled objects.
cimport cython


@cython.freelist(256)
cdef class IngressResult:
    cdef public object egress_spec, mcast_grp, packet_length, state, port, rid, itype, ops, frame, now_us, depth


@cython.locals(st=IngressResult)
cdef IngressResult _unicast_result(object egress_spec, object mcast_grp, object packet_length, object state,
                                   object port)

# The Pipeline's per-packet state as C members (its other attributes stay in the instance
# ``__dict__``): the four per-packet counters (``stats`` is a property that copies them into
# ``_stats``); ingress and egress_at, one call each per packet, are cpdef. ``r`` is the generated
# ingress's tuple (or None); egress_at's ``st`` is always this module's IngressResult.
# The compiled pipeline's C entry points (the generated module's _Code overrides them; runtime.py's
# PipelineCode). Its layout is what a compiled pipeline is built against (hostapps.compiled names this
# file's digest in the module).
cdef class PipelineCode:
    cpdef object ingress_c(self, bytes frame, long long ingress_port, long long now_us)
    cpdef object egress_c(self, object state, long long egress_port, long long enq_qdepth, long long deq_qdepth,
                          long long deq_timedelta_us, long long enq_timestamp_us, long long now_us)

cdef class Pipeline:
    cdef dict __dict__
    cdef public dict _stats
    cdef public long long _parsed, _ingress_drops, _egress_drops, _packets_out
    cdef public object _ingress_fn, _egress_fn
    cdef public PipelineCode _code
    cdef public list pending
    cdef public bint last_recirculated

    @cython.locals(r=tuple, code=PipelineCode, out=object)
    cpdef object ingress(self, object frame, long long ingress_port, long long now_us)
    @cython.locals(code=PipelineCode)
    cpdef object egress_at(self, IngressResult st, long long egress_port, long long enq_qdepth, long long deq_qdepth,
                           long long deq_timedelta_us, long long enq_timestamp_us, long long now_us)

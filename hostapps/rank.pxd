# Augmenting declarations of hostapps/rank.py for the optional compiled build (Cython's pure Python
# mode, hostapps.compiled): RankWorker as an extension type with typed fields (its per-event poll and
# next_timer read them). The .py stays the reference. States, iterations and step counts are small
# ints; times are doubles in both paths; a time that may be None stays an object. ``__dict__`` keeps
# the per-instance binding of ``on_datagram`` (and a driver's wrapper of it, emu.hostcal) working.

cimport cython
from hostapps.transport cimport Transport

cdef class RankWorker:
    cdef dict __dict__
    cdef public object spec, barrier, verifier, inputs, coll, phase_at, schedule, error
    cdef public object _sched0, start_lateness
    cdef public double clock_offset, start_at, coll_start, train_start
    cdef public bint measured, record_digest, _give_inputs
    cdef public long long steps, state, iteration, iterations_done
    cdef public list backlog, failures, _kept, _records
    cdef public dict _head
    cdef public Transport transport

    @cython.locals(state=cython.longlong, tr=Transport)
    cpdef list poll(self, double now)
    @cython.locals(state=cython.longlong)
    cpdef object next_timer(self)
    @cython.locals(tr=Transport)
    cpdef _transmit(self, object requests, double now)

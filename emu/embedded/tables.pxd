# Cython's augmenting declarations for tables.py (pure-Python mode: the .py is unchanged and stays the
# reference; scripts/build_compiled.py compiles the two together, hostapps.compiled.source_digest covers
# both). Table's lookups run once or twice per packet from the generated code: the state they read
# (default entry, exact dict, lpm levels, scan rows and groups) is C members; every other attribute
# stays in the instance ``__dict__``. Keys and masks stay Python ints (any width).
cimport cython


cdef class Table:
    cdef dict __dict__
    cdef public tuple default
    cdef public object mode
    cdef public dict exact, _groups
    cdef public list _lpm, _scan
    cdef public tuple _group_by
    cdef public bint _stale
    cdef public Py_ssize_t _seg_i
    cdef public dict _segments

    @cython.locals(d=dict)
    cpdef tuple lookup_lpm(self, object key)
    @cython.locals(d=dict)
    cpdef tuple lookup(self, object key)
    @cython.locals(rows=list, group=tuple, bounds=list, i=Py_ssize_t, si=Py_ssize_t, gb=tuple, seg=tuple,
                   starts=list, winners=list, lo=Py_ssize_t, hi=Py_ssize_t, mid=Py_ssize_t)
    cpdef tuple lookup_scan(self, object key)

"""Virtual time: the P4 switch cores and the host state machines in one discrete-event process.

docs/DESIGN.md section 6 and docs/virtual-time.md. :mod:`emu.vtime.network` holds the
event loop, switches and links; :mod:`emu.vtime.hosts` the ranks and background sources;
:mod:`emu.vtime.backend` the runner's ``sim`` back end; :mod:`emu.vtime.frames` the framing.
"""

"""Real time in Mininet: bring-up, the Mininet back end, the switch targets and the Mininet CLI.

Everything here imports Mininet (and needs root to run); nothing outside this package imports
it, so virtual time (:mod:`emu.vtime`) and the rest of the emulator run where Mininet is absent.

- :mod:`emu.mininet.network`: :func:`~emu.mininet.network.build_network`, the topology's
  Mininet network with the controller's operations on it (:class:`~emu.mininet.network.EmuNetwork`);
- :mod:`emu.mininet.backend`: :class:`~emu.mininet.backend.MininetBackend`, the ``--mode mininet``
  back end (one process per switch and worker);
- :mod:`emu.mininet.switch`: :class:`~emu.mininet.switch.SwitchTarget`, the Mininet ``Switch``
  every target subclasses; :mod:`emu.mininet.embedded` and :mod:`emu.mininet.bmv2` the targets
  (registered in :data:`emu.targets.TARGETS`);
- :mod:`emu.mininet.cli`: ``symphony-emu cli``, Mininet's CLI with Symphony commands.
"""

"""Where the shipped data lives: the P4 sources (``p4/``) and the scenarios (``topologies/``).

In a checkout (and an editable install) they are the repository's folders next to ``emu/``;
an installed copy (``pip install .``) carries them as data files under
``<prefix>/share/symphony-emu/`` (setup.cfg ``[options.data_files]``). :func:`data_dir`
says which, so code never computes these paths itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository root when running from a checkout (the folder holding ``emu/``).
CHECKOUT = Path(__file__).resolve().parent.parent
#: Where ``pip install .`` puts the data files (setup.cfg ``[options.data_files]``).
INSTALLED = Path(sys.prefix) / "share" / "symphony-emu"


def data_dir(name: str) -> Path:
    """The folder ``name`` (``"p4"`` or ``"topologies"``): the checkout's when this is a checkout
    (``setup.cfg`` beside ``emu/``), else the installed copy's.

    An installed ``emu`` sits in site-packages beside other distributions' packages, one of
    them called ``p4`` (p4runtime's protobufs), so a folder's name alone does not say it is ours.
    When neither exists the checkout's path is returned (errors then name it).
    """
    if (CHECKOUT / "setup.cfg").is_file() or not (INSTALLED / name).is_dir():
        return CHECKOUT / name
    return INSTALLED / name

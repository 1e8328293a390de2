"""Host applications: transport, DCQCN, ring collectives, the rank worker, traffic."""

from hostapps import compiled as _compiled  # noqa: F401  (compiled hot modules only when current)

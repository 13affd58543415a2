"""NoiseDraw: noise drawn before the data is touched, released next to a centre."""

import numpy as np

from . import _grid as _sn

__all__ = ["NoiseDraw"]


class NoiseDraw:
    """Noise drawn for a release, held back until the centre is known.

    Made by a mechanism's :meth:`draw` (before a solver touches the data, so
    the random stream never depends on the data); :meth:`release` is the only
    way to turn it into floats next to a centre. On the secure path it holds
    *integer* noise in grid units and :meth:`release` rounds the centre to
    the same grid before adding, so the output is ``fl(k + n) * gamma`` with
    ``k + n`` an exactly private integer (doc/privacy/secure_noise.rst,
    "The release contract"). There is deliberately no accessor for the noise
    as floats: ``centre + noise`` in floats with an unrounded centre leaks
    ``centre mod gamma`` in every release.

    Parameters
    ----------
    units : ndarray of shape (dimension,) or (size, dimension)
        Integer-valued noise in grid units (secure path) or float noise
        (float path, ``grid == 0``).
    grid : float
        The grid ``gamma``; ``0.0`` on the float path and for noiseless
        mechanisms.
    """

    __slots__ = ("_units", "_grid")

    def __init__(self, units, grid):
        self._units = units
        self._grid = float(grid)

    @property
    def shape(self):
        return self._units.shape

    def release(self, value):
        """``value + noise``: grid-rounded and exact on the secure path.

        ``value`` broadcasts to :attr:`shape` (one centre for every stacked
        draw, or one centre per draw).
        """
        if self._grid == 0.0:
            value = np.asarray(value, dtype=float)
            return np.broadcast_to(value, np.broadcast_shapes(value.shape, self.shape)) + self._units
        k = _sn.round_to_grid(value, self._grid, self.shape)
        return _sn.scale_back(k, self._units, self._grid)

    def split(self, parts, shape):
        """The draw cut into ``parts`` consecutive draws of ``shape`` each (one per step of a solver).

        The integer units stay integer and on the same grid: every part is released by its own
        :meth:`release`, like a draw of its own.
        """
        units = self._units.reshape((int(parts),) + tuple(shape))
        return [NoiseDraw(u, self._grid) for u in units]

    def __repr__(self):
        return f"NoiseDraw(shape={self.shape}, grid={self._grid!r})"


"""The notebook layer: the ``%%kernel`` cell magic and the ``kl.lab`` inspector widgets.

Nothing here is imported by ``import kernlab``: ``%load_ext kernlab`` loads ``magic`` and
``kl.lab`` loads ``lab`` on first use, so IPython, ipywidgets, pygments and matplotlib stay
optional. Every rich object carries text/plain and text/html fallbacks (see ``display``).
"""

"""The reference modules of every family under one name.

Committed ``case.json`` files name their module as ``reference.vitbench_ref.modules.<Class>``
(``module``), and older code imports from here; this module re-exports the public names of the
shared layers (:mod:`.layers`) and of the families that existed when the modules were split into
one file per family (:mod:`.vit`, :mod:`.t2t`, :mod:`.deform`, :mod:`.detector`, :mod:`.ddetr`).
New code imports the family module itself; nothing inside the package imports this one."""

from .layers import *  # noqa: F401,F403
from .vit import *  # noqa: F401,F403
from .t2t import *  # noqa: F401,F403
from .deform import *  # noqa: F401,F403
from .detector import *  # noqa: F401,F403
from .ddetr import *  # noqa: F401,F403

"""Sotto's benchmarks (``sotto bench …``, or ``python -m bench.NAME``).

``core`` is imported first: it sets how the libraries' idle threads wait (``core.compute``), which
each library reads when it loads, so it must come before numpy; otherwise numpy's OpenBLAS threads
keep spinning beside CTranslate2 and every speech decode is slower, which would skew every timing.
"""

import core  # noqa: F401  (before numpy: see above)

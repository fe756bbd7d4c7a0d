"""Sotto's benchmarks (``sotto bench …``, or ``python -m bench.NAME``).

``core`` is imported first: it sets how the libraries' idle threads wait (``core.compute``), which
each library reads when it loads, so it must come before numpy. Run as ``python -m bench.verified``
without it, numpy loaded first and its OpenBLAS threads kept spinning beside CTranslate2: tiny.en's
decodes took 1.6 times as long on two cores (10.3 s against 6.5 s on jfk + mfa_acoustic_corpus).
"""

import core  # noqa: F401  (before numpy: see above)

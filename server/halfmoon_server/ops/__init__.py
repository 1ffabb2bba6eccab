"""Operations: the ``halfmoon serve`` command and what an operator asks a running server."""

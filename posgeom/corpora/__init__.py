"""Corpora: synthetic families, SST-2 and IMDB loaders, tokenisation, cached positional counts."""

__all__: list[str] = []

"""Positional encodings as PyTorch modules, a BERT-style encoder and its training loop."""

__all__: list[str] = []

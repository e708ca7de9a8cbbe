"""Output parity on shared weights: the same model with the same weights computes the same outputs on Keras 3's
three backends, in Keras 3 and native PyTorch, and under torch.compile as in eager (docs/PARITY.md)."""

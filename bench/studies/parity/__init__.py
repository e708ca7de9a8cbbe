"""Output parity on shared weights: the same model with the same weights computes the same outputs on Keras 3's
three backends, in Keras 3 and native PyTorch, and under torch.compile as in eager (docs/PARITY.md)."""


def parity_command(argv: list[str]) -> int:
    """output parity on shared weights (Keras 3 backends, native PyTorch, compiled) -> PARITY.md"""
    from bench.studies.parity.run import main

    return main(argv)


COMMANDS = {"parity": parity_command}

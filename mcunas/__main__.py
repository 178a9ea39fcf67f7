"""Entry point for ``python -m mcunas``."""

from mcunas.commands.cli import main

if __name__ == "__main__":
    main()

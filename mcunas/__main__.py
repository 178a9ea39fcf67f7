"""Entry point for ``python -m mcunas``."""

from mcunas.cli import main

if __name__ == "__main__":
    main()

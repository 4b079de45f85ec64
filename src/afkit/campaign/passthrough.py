"""The snakemake options a user passes through ``afkit campaign run C.yaml [-- OPTIONS]``, checked by
snakemake's own parser before anything is pulled or started.

A misspelt option used to reach snakemake only after the image was pulled, and end there with
snakemake's usage error. :func:`check` runs ``snakemake.cli.get_argument_parser()`` (the parser
``snakemake`` itself uses, with every installed executor plugin's options) on them first: an
option it does not know or a value it refuses is one ``afkit: error:`` (exit 2).
"""

from __future__ import annotations

import warnings
from typing import NoReturn

from afkit.errors import UsageError

HINT = "afkit campaign run C.yaml [-- SNAKEMAKE OPTIONS]: see snakemake --help for the options"


def check(options: list[str]) -> None:
    """UsageError naming what snakemake's parser refuses in OPTIONS (none: nothing to check)."""
    if not options:
        return
    with warnings.catch_warnings():  # an executor plugin's import-time warnings (htcondor's config)
        warnings.simplefilter("ignore")
        from snakemake.cli import get_argument_parser
        from snakemake.exceptions import CliException

        parser = get_argument_parser()

    def refused(message: str) -> NoReturn:
        raise UsageError(f"snakemake option(s): {message}", hint=HINT)

    parser.error = refused
    try:
        _, unknown = parser.parse_known_args(options)
    except CliException as err:  # snakemake's own checks of a value (e.g. --cores abc)
        refused(str(err))
    if unknown:
        refused(f"not known to snakemake: {' '.join(unknown)}")

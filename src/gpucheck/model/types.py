"""Value types the model's records share."""

from __future__ import annotations

from typing import Annotated

import msgspec

# Integers as C drivers report them (64-bit): a larger one in a snapshot is corrupt, and would
# overflow the float arithmetic of the checks.
Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

"""Every model and input type of the SDK, by name: `from offerkit.types import Account, PlansCreatePricingCardParam`.

Models (pydantic) are what calls answer; `...Param` TypedDicts are nested inputs (pass plain dicts).
"""

from ._generated.models import *  # noqa: F403
from ._generated.models import __all__ as _models
from ._generated.params import *  # noqa: F403
from ._generated.params import __all__ as _params

__all__ = [*_models, *_params]

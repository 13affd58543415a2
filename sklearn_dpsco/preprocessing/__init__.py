"""Private and data-independent transformers, and pipelines with one privacy budget.

See doc/privacy/preprocessing.rst.
"""

from ._clipper import RowNormClipper
from ._pipeline import PREPROCESSING_SHARE, DPPipeline, make_dp_pipeline
from ._scaler import DPStandardScaler

__all__ = ["PREPROCESSING_SHARE", "DPPipeline", "DPStandardScaler", "RowNormClipper", "make_dp_pipeline"]

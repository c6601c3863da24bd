"""insightd's Python client: evaluate, report consumption, label, switch authorization, read the
catalog and, for admins, callers and rate limits, with every answer's receipt verified.
See README.md beside this package and docs/client.md."""
__version__ = "0.1.0"

from .client import MAX_LABELS, OPERATIONS, Client, Evaluation  # noqa: E402
from .enums import *  # noqa: E402,F401,F403
from .errors import *  # noqa: E402,F401,F403
from .models import *  # noqa: E402,F401,F403
from .receipts import KeyPins, Receipt, ReceiptVerifier  # noqa: E402,F401

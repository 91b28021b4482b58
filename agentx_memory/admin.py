"""The admin key and the ``system`` scope (issue 19): rules that hold for every user of an installation.

A control memory of scope ``system`` is read for every user, wherever the user's global rules are read (recall,
``list_controls``, ``find_controls``, ``get_control``), and is written, changed or deleted only with the admin key,
``security.admin_key``. The key is presented once, to :meth:`AsyncAgentMemory.as_admin
<agentx_memory.AsyncAgentMemory.as_admin>`, which returns an admin view; every system write checks it again, so a key
changed in the settings stops an old view. Comparison is constant-time (:func:`hmac.compare_digest`), and neither the
key nor the presented value is ever logged, audited or put in an error message.

A system rule belongs to no user: its ``user_id`` is :data:`SYSTEM_USER_ID`, ``"\u2028system"`` (a LINE SEPARATOR,
then ``system``), which no user id can be: every id is refused with a line separator in it. So a user's
``forget_user``, ``forget``, export and snapshot, which all select by the user's id, never reach a system rule, and no
user can write one by naming a user id. (Not the empty string: FalkorDB 4.16's indexed equality never matches ``''``;
not a leading space: a parameter starting with one crashed FalkorDB 4.16.3 here.)
"""

from __future__ import annotations

import hmac
from typing import Final

from pydantic import SecretStr

from .errors import AdminKeyError
from .settings import SecuritySettings

__all__ = ["SYSTEM_SCOPE", "SYSTEM_USER_ID", "check_admin_key"]

#: The graph's owner id of every system-scope memory: no user's id (ids never hold a line separator).
SYSTEM_USER_ID: Final = "\u2028system"
#: The scope value of a system-scope memory.
SYSTEM_SCOPE: Final = "system"


def check_admin_key(settings: SecuritySettings, presented: SecretStr | str | None) -> None:
    """Refuse (:class:`~agentx_memory.errors.AdminKeyError`) unless ``presented`` is ``security.admin_key``."""
    if settings.admin_key is None:
        raise AdminKeyError("security.admin_key", "is not set: system-scope writes are refused on this installation")
    if presented is None:
        raise AdminKeyError("admin_key", "is required for a system-scope write: use memory.as_admin(admin_key)")
    given = presented.get_secret_value() if isinstance(presented, SecretStr) else presented
    if not isinstance(given, str) or not hmac.compare_digest(
            given.encode("utf-8", "surrogatepass"), settings.admin_key.get_secret_value().encode("utf-8",
                                                                                                "surrogatepass")):
        raise AdminKeyError("admin_key", "does not match security.admin_key")

"""What undoing a merge writes back to the node that survived it: what the merge added, taken back, and nothing that
changed since.

A merge wrote some of the survivor's values (``merged``) over what they were (``before``). By the time it is undone
the survivor may have moved on: recalled again (its access count and last access), decayed, described anew. Putting
``before`` back wholesale would undo those too. So, per value:

- a **count** gives back what the merge added to it (``merged - before``), keeping what was counted since;
- a **list** (aliases, the ids merged in) loses the entries the merge added, keeping those added since;
- **any other value** goes back to ``before`` only while it still holds what the merge wrote; changed since, it stays.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["reverted_values"]


def reverted_values(before: Mapping[str, Any], merged: Mapping[str, Any], current: Mapping[str, Any], *,
                    counts: Collection[str] = (), lists: Collection[str] = ()) -> dict[str, Any]:
    """The values of ``before``'s keys to write back (see the module docstring); ``counts`` and ``lists`` name the
    keys that are counts and lists."""
    out: dict[str, Any] = {}
    for key, old in before.items():
        now, wrote = current.get(key), merged.get(key)
        if key in counts:
            added = int(wrote or 0) - int(old or 0)
            # below what the merge wrote: the merge never reached this value (a run cut short), so it has nothing to
            # give back
            out[key] = int(now or 0) - added if int(now or 0) >= int(wrote or 0) else now
        elif key in lists:
            added_entries = [x for x in wrote or [] if x not in (old or [])]
            out[key] = [x for x in now or [] if x not in added_entries]
        else:
            out[key] = old if now == wrote else now
    return out

"""backends.drop_namespace, the one way to remove a namespace: it drops exactly that namespace and refuses the
shared default one."""

from __future__ import annotations

import uuid

import pytest
import redis

from agentx_memory.backends import drop_namespace
from agentx_memory.errors import ConfigurationError
from tests.conftest import falkordb_only, run


@falkordb_only  # the keys live in the embedded Redis whichever graph backend runs
def test_dropping_a_namespace_keeps_the_keys_of_a_longer_prefix(namespaces):
    tag = f"dropns_{uuid.uuid4().hex[:8]}"
    settings = namespaces.settings_for(tag, redis={"key_prefix": tag})  # a prefix without a trailing ':'
    ours = [f"{tag}working:alice:_global:c1:turns", f"{tag}session:s1:k", f"{tag}consolidation:job:j1"]
    theirs = [f"{tag}b:working:bob:_global:c1:turns", f"{tag}bsession:s1:k"]
    client = redis.Redis.from_url(namespaces.endpoints.falkordb_url)
    try:
        for key in ours + theirs:
            client.set(key, "1")
        run(drop_namespace(settings, graph=False))
        assert [key for key in ours if client.exists(key)] == []
        assert [key for key in theirs if client.exists(key)] == theirs
    finally:
        client.delete(*theirs)
        client.close()


@pytest.mark.parametrize(
    ("overrides", "graph", "named"),
    [
        ({"postgres": {"db_schema": "public"}}, False, "schema 'public'"),
        ({"redis": {"key_prefix": ""}}, False, "key prefix ''"),
        ({"graph": {"name": "agentx"}}, True, "graph 'agentx'"),
    ],
)
def test_the_shared_default_namespace_is_never_dropped(namespaces, overrides, graph, named):
    settings = namespaces.settings_for(f"dropns_{uuid.uuid4().hex[:8]}", **overrides)
    with pytest.raises(ConfigurationError, match="refusing to drop the default namespace") as caught:
        run(drop_namespace(settings, graph=graph))
    assert named in str(caught.value)

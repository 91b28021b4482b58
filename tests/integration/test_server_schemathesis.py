"""Schemathesis 4 against the REST service's own OpenAPI document, over a real socket, on both graph backends:
for every operation, generated requests (valid ones, then invalid ones) never get a 5xx, only the status codes the
document lists, with the media type it lists and a body that conforms to its schema.

The run is bounded (EXAMPLES per operation and mode, derandomized, no example database) so both backends together
finish in about two minutes on a 2-core machine.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.serving import served  # noqa: F401  (fixture)

#: Generated requests per operation, per generation mode.
EXAMPLES = {GenerationMode.POSITIVE: 5, GenerationMode.NEGATIVE: 2}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]


def test_the_service_keeps_to_its_openapi_document(served):  # noqa: F811
    api = served(server={"read_rate_limit": 1_000_000, "write_rate_limit": 1_000_000})
    auth = {"Authorization": f"Bearer {api.key('alice')}"}
    seeded = api.client(auth["Authorization"].removeprefix("Bearer "))
    seeded.post("/v1/turns", json={"conversation_id": "c1", "content": "I moved to Lisbon in May."})
    seeded.post("/v1/facts", json={"claim": "Alice lives in Lisbon"})
    schema = schemathesis.openapi.from_url(f"{api.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 45  # every route is in the document
    ran = {mode: 0 for mode in EXAMPLES}
    for operation in operations:
        for mode, count in EXAMPLES.items():
            @settings(max_examples=count, deadline=None, derandomize=True, database=None,
                      phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode, headers=auth))
            def check(case) -> None:
                case.call_and_validate(base_url=api.url, checks=CHECKS)

            try:
                check()
            except Unsatisfiable:  # every input of the operation takes any value (GET /health, a string path id)
                assert mode == GenerationMode.NEGATIVE, operation.path
                continue
            except Exception as exc:  # say which operation and mode before Hypothesis's report
                pytest.fail(f"{operation.method.upper()} {operation.path} ({mode.value}): {exc}", pytrace=False)
            ran[mode] += 1
    assert ran[GenerationMode.POSITIVE] == len(operations) and ran[GenerationMode.NEGATIVE] >= len(operations) // 2

# The agentx-memory image used by docker-compose.yml for `agentx-memory migrate`, `worker` and `serve` (the api
# service). It installs this checkout with the REST service's extra (`pip install ".[server]"`), so the image always
# matches the schema files and code of the same revision. Configuration comes only from AGENTX_* environment
# variables (see docs/deployment.md).
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

WORKDIR /src
# Only what the wheel is built from: the build context may hold .venv, .agentx and node_modules.
COPY pyproject.toml README.md ./
COPY agentx_memory ./agentx_memory
COPY workers ./workers
COPY schema ./schema
RUN pip install ".[server]" && rm -rf /src

RUN useradd --system --create-home --home-dir /home/agentx agentx
USER agentx
WORKDIR /home/agentx
# Only used if a store is left unconfigured (embedded mode); docker-compose.yml configures all three.
ENV AGENTX_HOME=/home/agentx/.agentx

ENTRYPOINT ["agentx-memory"]
CMD ["worker"]

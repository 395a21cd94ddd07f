# turnwatch: multi-stage build; the runtime image runs offline as a non-root user.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY turnwatch turnwatch
COPY collector collector
COPY scorers scorers
COPY exporters exporters
RUN python -m pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home-dir /var/lib/turnwatch --create-home turnwatch
COPY --from=build /install /usr/local
USER turnwatch
WORKDIR /var/lib/turnwatch
ENV TURNWATCH_OTLP__HOST=0.0.0.0 \
    TURNWATCH_OPS__HOST=0.0.0.0 \
    PYTHONUNBUFFERED=1
EXPOSE 4317 4318 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:9464/healthz', timeout=2).status == 200 else 1)"]
ENTRYPOINT ["turnwatch"]
CMD ["serve"]

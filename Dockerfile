# contextshift API image: installs the project and runs `contextshift serve` as a non-root user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DO_NOT_TRACK=1 \
    CONTEXTSHIFT_DATA_DIR=/var/lib/contextshift

WORKDIR /app
COPY pyproject.toml README.md ./
COPY service ./service
COPY audit ./audit
COPY detectors ./detectors
COPY domains ./domains
COPY reports ./reports
COPY imagecontext ./imagecontext
COPY slicelang ./slicelang
RUN pip install --no-cache-dir . \
    && useradd --system --uid 10001 --home-dir /var/lib/contextshift --create-home contextshift

USER contextshift
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
CMD ["contextshift", "serve", "--host", "0.0.0.0", "--port", "8000"]

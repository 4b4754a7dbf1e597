# cachegql: serves the embedded demo data by default; mount an index and pass --index to
# serve yours. Runs as an unprivileged user; `.ci/wheel-check` rehearses these steps on a
# machine without a Docker engine (the same install, the demo data baked as root and
# served as another user, the HEALTHCHECK command).
#
# The base image is pinned by digest (python:3.11-slim-bookworm, linux/amd64 and arm64);
# to move it: docker buildx imagetools inspect python:3.11-slim-bookworm
FROM python:3.11-slim-bookworm@sha256:2e32f7d302adc1c37428355c1e646897c0c53f4fd60b6a551245fb90ee129f91

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    CACHEGQL_CACHE_DIR=/var/cache/cachegql

WORKDIR /app
COPY requirements.lock ./
RUN pip install --no-deps -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY index ./index
COPY schema ./schema
COPY server ./server
COPY demo ./demo
# The demo data is built here, as root, readable by everyone; serving it needs no writes.
RUN pip install --no-deps . \
    && python -c "from cachegql.server.default_data import default_index; default_index()" \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin cachegql

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/readyz', timeout=4)"]
ENTRYPOINT ["cachegql"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

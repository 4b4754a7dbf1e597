# cachegql: serves the embedded demo data by default; mount an index and pass --index to serve yours.
FROM python:3.11-slim
WORKDIR /app
COPY requirements.lock ./
RUN pip install --no-cache-dir -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY index ./index
COPY schema ./schema
COPY server ./server
COPY demo ./demo
RUN pip install --no-cache-dir --no-deps . \
    && CACHEGQL_CACHE_DIR=/var/cache/cachegql python -c "from cachegql.server.default_data import default_index; default_index()"
ENV CACHEGQL_CACHE_DIR=/var/cache/cachegql
EXPOSE 8000
ENTRYPOINT ["cachegql"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

# The console, Celery worker and beat, and the gateways' host (its Kroxylicious). Kafka runs from
# the apache/kafka image (docker-compose.yaml).

# Kroxylicious, the gateways' Kafka proxy (docs/gateways.md), fetched and built as `make setup`
# does: its runtime from Maven Central, devstack/kroxylicious/'s main class and plugin beside it.
FROM maven:3.9-eclipse-temurin-17 AS proxy
WORKDIR /build
COPY devstack/pom.xml devstack/maven-settings.xml devstack/build-kroxylicious.sh devstack/
COPY devstack/kroxylicious devstack/kroxylicious
RUN mvn -B -q -gs devstack/maven-settings.xml -f devstack/pom.xml -P kroxylicious \
      dependency:copy-dependencies -DoutputDirectory=../.cache/jars/kroxylicious \
    && devstack/build-kroxylicious.sh .cache/jars/kroxylicious

FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md manage.py ./
COPY console console
COPY replication replication
COPY spark_jobs spark_jobs
COPY infra infra
COPY devstack devstack
COPY cli cli
COPY templates templates
COPY --from=proxy /build/.cache/jars/kroxylicious .cache/jars/kroxylicious
# Editable, so the project root (templates, manage.py) stays /app.
RUN pip install --no-cache-dir -e '.[postgres]'
ENV ISTHMUS_VAR_DIR=/data STATIC_ROOT=/app/static DJANGO_SETTINGS_MODULE=console.settings
# Throwaway keys and state for this build step only, so no key ends up in an image layer.
RUN ISTHMUS_VAR_DIR=/tmp/build SECRET_KEY=build-only \
    ISTHMUS_ENCRYPTION_KEY="$(python -c 'import base64,os;print(base64.urlsafe_b64encode(os.urandom(32)).decode())')" \
    python manage.py collectstatic --noinput -v 0 && rm -rf /tmp/build
EXPOSE 8000
CMD ["python", "-m", "console.web_server", "--listen", "0.0.0.0:8000"]

# The console, Celery worker and beat. Kafka runs from the apache/kafka image (docker-compose.yaml).
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
# Editable, so the project root (templates, manage.py) stays /app.
RUN pip install --no-cache-dir -e '.[postgres]'
ENV ISTHMUS_VAR_DIR=/data STATIC_ROOT=/app/static DJANGO_SETTINGS_MODULE=console.settings
# Throwaway keys and state for this build step only, so no key ends up in an image layer.
RUN ISTHMUS_VAR_DIR=/tmp/build SECRET_KEY=build-only \
    ISTHMUS_ENCRYPTION_KEY="$(python -c 'import base64,os;print(base64.urlsafe_b64encode(os.urandom(32)).decode())')" \
    python manage.py collectstatic --noinput -v 0 && rm -rf /tmp/build
EXPOSE 8000
CMD ["python", "-m", "console.web_server", "--listen", "0.0.0.0:8000"]

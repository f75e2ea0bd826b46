# The console, Celery worker and beat. Kafka runs from the apache/kafka image (docker-compose.yaml).
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md manage.py ./
COPY console console
COPY replication replication
COPY spark_jobs spark_jobs
COPY devstack devstack
COPY templates templates
# Editable, so the project root (templates, manage.py) stays /app.
RUN pip install --no-cache-dir -e '.[postgres]'
ENV ISTHMUS_VAR_DIR=/data DJANGO_SETTINGS_MODULE=console.settings
RUN mkdir -p /data && python manage.py collectstatic --noinput -v 0
EXPOSE 8000
CMD ["gunicorn", "console.wsgi", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4"]

"""Prometheus metrics, for a scraper holding a viewer's API token (Bearer) or a signed-in user."""

from django.http import HttpResponse

from console.api.base import endpoint
from replication.overview.metrics import prometheus_text


@endpoint(GET="console.view")
def metrics(request):
    return HttpResponse(prometheus_text(), content_type="text/plain; version=0.0.4; charset=utf-8")

"""The JSON API, on Kafka REST v3 paths (mounted at /kafka/v3/ and at each registered
cluster's own root, /kafka/<cluster name>/v3/): its OpenAPI document, then its routes."""

from console.api import openapi, routes

urlpatterns = [openapi.ROUTE, *routes.urlpatterns]

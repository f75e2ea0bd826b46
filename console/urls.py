from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.generic import RedirectView

from console.access import public, require
from console.views import clusters, health

urlpatterns = [
    path(
        "", require("console.view")(RedirectView.as_view(pattern_name="clusters")), name="dashboard"
    ),
    path("login/", public(auth_views.LoginView.as_view()), name="login"),
    path("logout/", public(auth_views.LogoutView.as_view()), name="logout"),
    path("healthz", health.healthz, name="healthz"),
    path("clusters/", clusters.cluster_list, name="clusters"),
    path("clusters/new/", clusters.cluster_create, name="cluster-create"),
    path("clusters/<str:name>/", clusters.cluster_detail, name="cluster-detail"),
]

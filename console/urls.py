from django.urls import include, path

from console.access import public
from console.api import metrics
from console.views import (
    account,
    api_reference,
    approvals,
    audit,
    clusters,
    dashboard,
    data_plane,
    flows,
    health,
    link_filters,
    links,
    mirror_groups,
    mirrors,
    quarantine,
    rpo,
    scenarios,
    schemas,
    sign_in,
    users,
    verifications,
)

LINK = "links/<str:destination>/<str:name>/"
MIRROR = "mirrors/<str:destination>/<str:topic>/"
FLOW = LINK + "flows/<str:flow>/"
USER = "users/<str:username>/"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("login/", public(sign_in.SignIn.as_view()), name="login"),
    path("login/sso/", sign_in.sign_on, name="sign-on"),
    path("login/sso/done/", sign_in.sign_on_done, name="sign-on-done"),
    path("logout/", public(sign_in.SignOut.as_view()), name="logout"),
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("kafka/v3/", include("console.api.urls")),
    # One root per registered cluster, as Confluent Server's embedded REST serves one cluster:
    # Confluent's tools take `--url …/kafka/<cluster name>` and use the first cluster listed.
    path("kafka/<str:cluster_root>/v3/", include("console.api.urls")),
    path("account/", account.account, name="account"),
    path("account/password/", account.account_password, name="account-password"),
    path("account/notifications/", account.notification_list, name="notifications"),
    path("account/tokens/<int:pk>/revoke/", account.token_revoke, name="token-revoke"),
    path("api/", api_reference.api_reference, name="api-reference"),
    path("clusters/", clusters.cluster_list, name="clusters"),
    path("clusters/new/", clusters.cluster_create, name="cluster-create"),
    path("clusters/<str:name>/", clusters.cluster_detail, name="cluster-detail"),
    path(
        "clusters/<str:name>/schema-registry/",
        clusters.cluster_schema_registry,
        name="cluster-schema-registry",
    ),
    path("links/", links.link_list, name="links"),
    path("links/new/", links.link_create, name="link-create"),
    path(LINK, links.link_detail, name="link-detail"),
    path(LINK + "charts/", links.link_charts, name="link-charts"),
    path(LINK + "configs/", links.link_configs_alter, name="link-configs-alter"),
    path(LINK + "schemas/sync/", schemas.link_schemas_sync, name="link-schemas-sync"),
    path(LINK + "schemas/promote/", schemas.link_schemas_promote, name="link-schemas-promote"),
    path(LINK + "filters/", link_filters.link_filters, name="link-filters"),
    path(LINK + "filters/preview/", link_filters.link_filters_preview, name="link-filters-preview"),
    path(LINK + "filters/save/", link_filters.link_filters_save, name="link-filters-save"),
    path(LINK + "filters/export/", link_filters.link_filters_export, name="link-filters-export"),
    path(LINK + "pause/", links.link_pause, name="link-pause"),
    path(LINK + "resume/", links.link_resume, name="link-resume"),
    path(LINK + "delete/", approvals.link_delete, name="link-delete"),
    # Many mirror topics of the link at once: pause or resume; promote or fail over.
    path(
        LINK + "switch/<str:action>/",
        mirrors.link_mirrors_switch,
        name="link-mirrors-switch",
    ),
    path(LINK + "cutover/<str:action>/", approvals.link_mirrors_stop, name="link-mirrors-stop"),
    path(LINK + "approval-policy/", approvals.link_policy, name="link-approval-policy"),
    path(LINK + "rpo-target/", rpo.link_rpo_target, name="link-rpo-target"),
    path(LINK + "mirrors/new/", mirrors.mirror_create, name="mirror-create"),
    path(LINK + "new-flow/", flows.flow_create, name="flow-create"),
    path(
        "replicator-import/<str:destination>/",
        flows.replicator_import_page,
        name="replicator-import",
    ),
    path(FLOW, flows.flow_detail, name="flow-detail"),
    path(FLOW + "charts/", flows.flow_charts, name="flow-charts"),
    path(FLOW + "pause/", flows.flow_pause, name="flow-pause"),
    path(FLOW + "resume/", flows.flow_resume, name="flow-resume"),
    path(FLOW + "delete/", flows.flow_delete, name="flow-delete"),
    path("mirrors/", mirrors.mirror_list, name="mirrors"),
    path("data-plane/", data_plane.data_plane, name="data-plane"),
    path(MIRROR, mirrors.mirror_detail, name="mirror-detail"),
    path(MIRROR + "charts/", mirrors.mirror_charts, name="mirror-charts"),
    path(MIRROR + "groups/", mirror_groups.mirror_groups_section, name="mirror-groups"),
    path(MIRROR + "pause/", mirrors.mirror_pause, name="mirror-pause"),
    path(MIRROR + "verify/", verifications.mirror_verify, name="mirror-verify"),
    path(
        MIRROR + "verifications/<int:pk>/",
        verifications.mirror_verification,
        name="mirror-verification",
    ),
    path(MIRROR + "resume/", mirrors.mirror_resume, name="mirror-resume"),
    path(MIRROR + "delete/", mirrors.mirror_delete, name="mirror-delete"),
    path(MIRROR + "quarantine/", quarantine.mirror_quarantine, name="mirror-quarantine"),
    path(
        MIRROR + "quarantine/export.json",
        quarantine.mirror_quarantine_export,
        {"fmt": "json"},
        name="mirror-quarantine-json",
    ),
    path(
        MIRROR + "quarantine/export.csv",
        quarantine.mirror_quarantine_export,
        {"fmt": "csv"},
        name="mirror-quarantine-csv",
    ),
    path(
        MIRROR + "quarantine/delete/",
        quarantine.mirror_quarantine_delete,
        name="mirror-quarantine-delete",
    ),
    path(MIRROR + "promote/", approvals.mirror_stop, {"action": "promote"}, name="mirror-promote"),
    path(
        MIRROR + "reverse/",
        approvals.mirror_stop,
        {"action": "reverse-and-start-mirror"},
        name="mirror-reverse",
    ),
    path(
        MIRROR + "fail-back/",
        approvals.mirror_stop,
        {"action": "truncate-and-restore"},
        name="mirror-fail-back",
    ),
    path(
        MIRROR + "reverse-paused/",
        approvals.mirror_stop,
        {"action": "reverse-and-pause-mirror"},
        name="mirror-reverse-paused",
    ),
    path(
        MIRROR + "failover/", approvals.mirror_stop, {"action": "failover"}, name="mirror-failover"
    ),
    path("approvals/", approvals.approval_list, name="approvals"),
    path("approvals/<int:pk>/", approvals.approval_detail, name="approval-detail"),
    path("approvals/<int:pk>/approve/", approvals.approval_approve, name="approval-approve"),
    path("approvals/<int:pk>/reject/", approvals.approval_reject, name="approval-reject"),
    path("approvals/<int:pk>/withdraw/", approvals.approval_withdraw, name="approval-withdraw"),
    path("scenarios/", scenarios.scenario_list, name="scenarios"),
    path("scenarios/<str:name>/start/", scenarios.scenario_start, name="scenario-start"),
    path("scenarios/runs/<int:pk>/", scenarios.run_detail, name="scenario-run"),
    path("scenarios/runs/<int:pk>/<str:how>/", scenarios.run_go_on, name="scenario-run-go-on"),
    path("audit/", audit.audit_list, name="audit"),
    path("audit/export.csv", audit.audit_export, name="audit-export"),
    path("users/", users.user_list, name="users"),
    path("users/new/", users.user_create, name="user-create"),
    path(USER, users.user_detail, name="user-detail"),
    path(USER + "role/", users.user_role, name="user-role"),
    path(USER + "disable/", users.user_disable, name="user-disable"),
    path(USER + "enable/", users.user_enable, name="user-enable"),
    path(USER + "password/", users.user_password, name="user-password"),
    path(USER + "delete/", users.user_delete, name="user-delete"),
]

# Django's own refusals (a malformed request, no such page, a failure) in the console's words.
handler400 = "console.views.errors.bad_request"
handler404 = "console.views.errors.page_not_found"
handler500 = "console.views.errors.server_error"

import pytest

from devstack import kafka

pytestmark = pytest.mark.e2e


def test_a_viewer_logs_in_and_sees_both_clusters_reachable(login, registered_clusters, var_dir):
    page = login("viewer")
    for node in kafka.NODES:
        row = page.locator(f"tr[data-cluster={node.name}]")
        assert row.locator(".cluster-id").inner_text() == kafka.cluster_id_on_disk(node, var_dir)
        assert row.locator(".badge").first.inner_text() == "reachable"
    assert page.get_by_role("link", name="Register cluster").count() == 0


def test_an_admin_sees_a_registration_error_inline_and_nothing_is_saved(
    login, live_server, devstack
):
    from replication.models import KafkaCluster

    page = login("admin")
    page.get_by_role("link", name="Register cluster").click()
    page.fill("#id_name", "nowhere")
    page.fill("#id_bootstrap_servers", "127.0.0.1:1")
    page.get_by_role("button", name="Register").click()
    alert = page.get_by_role("alert")
    assert "127.0.0.1:1" in alert.inner_text()
    assert "Nothing was registered" in alert.inner_text()
    assert not KafkaCluster.objects.filter(name="nowhere").exists()


def test_logging_out_returns_to_the_login_page(login, live_server):
    page = login("operator")
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    page.goto(f"{live_server.url}/clusters/")
    assert page.url.startswith(f"{live_server.url}/login/")

"""A requester is told what became of their request: in the console (an unread count in the
navigation bar, a page of notifications), by a webhook and by e-mail where configured. The
webhook and mail servers are real ones, on loopback. Only the database is needed, not Kafka."""

from __future__ import annotations

import json
import socket
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from aiosmtpd.controller import Controller
from django.urls import reverse
from django.utils import timezone

from replication.actions import approvals
from replication.governance import audit, notifications, stale_requests
from replication.models import ApprovalRequest, ClusterLink, KafkaCluster, Notification

pytestmark = [pytest.mark.db, pytest.mark.django_db]


@pytest.fixture
def ask(users):
    """A pending promote of `orders` on a link, asked by the operator (the link's rows only:
    nothing here reaches a cluster)."""
    cluster = KafkaCluster.objects.create(name="dest", bootstrap_servers="127.0.0.1:1")
    link = ClusterLink.objects.create(name="ab-link", destination=cluster, source_cluster_id="x")

    def make(topics=("orders",), approvals_required: int = 1) -> ApprovalRequest:
        return ApprovalRequest.objects.create(
            link=link,
            link_name=link.name,
            destination=cluster,
            action=ApprovalRequest.Action.PROMOTE,
            topics=list(topics),
            reason="moving the consumers",
            requester=users["operator"],
            requester_name="operator",
            approvals_required=approvals_required,
            expires_at=timezone.now() + timedelta(hours=1),
        )

    return make


def _actor(users, role: str) -> audit.Actor:
    return audit.Actor(user=users[role], name=role)


def _told(users) -> list[tuple[str, str]]:
    return [(n.event, n.text) for n in Notification.objects.filter(user=users["operator"])]


def test_the_requester_is_told_of_an_approval_a_rejection_and_a_supersession(ask, users):
    approved, rejected, overtaken = ask(), ask(("payments",)), ask(("refunds",))
    approvals.approve(_actor(users, "approver"), approved)
    approvals.reject(_actor(users, "approver"), rejected, "not during the sale")
    stale_requests.supersede(approved.link, ["refunds"], "mirror refunds was paused")

    assert _told(users) == [
        (
            "request.superseded",
            f"Request {overtaken.pk} to promote refunds on link ab-link was superseded (mirror "
            "refunds was paused); ask again if it is still wanted",
        ),
        (
            "request.rejected",
            f"Request {rejected.pk} to promote payments on link ab-link was rejected by "
            "approver: not during the sale",
        ),
        (
            "request.approved",
            f"Request {approved.pk} to promote orders on link ab-link was approved by approver; "
            "it runs now",
        ),
    ]
    # No one else is told, and a withdrawal (the requester's own doing) tells no one.
    approvals.withdraw(_actor(users, "operator"), ask())
    assert Notification.objects.count() == 3
    assert not Notification.objects.exclude(user=users["operator"]).exists()


def test_a_request_waiting_for_a_second_approver_tells_nothing_yet(ask, users):
    request = ask(approvals_required=2)
    approvals.approve(_actor(users, "approver"), request)
    assert _told(users) == []


def test_the_console_counts_the_unread_and_the_page_marks_them_read(ask, users, client_as):
    approvals.reject(_actor(users, "approver"), ask(), "wrong topic")
    client = client_as("operator")
    home = client.get(reverse("links")).content.decode()
    assert '<span class="badge warn" id="unread-notifications">1</span>' in home

    page = client.get(reverse("notifications")).content.decode()
    assert "was rejected by approver: wrong topic" in page
    assert '<span class="badge warn">new</span>' in page  # new on this reading
    after = client.get(reverse("links")).content.decode()
    assert 'id="unread-notifications"' not in after
    # Another user's page shows none of it.
    assert "wrong topic" not in client_as("viewer").get(reverse("notifications")).content.decode()


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []
    answer = 204

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers["Content-Length"])
        _Hook.received.append(json.loads(self.rfile.read(length)))
        self.send_response(_Hook.answer)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook(settings):
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hook.received, _Hook.answer = [], 204
    settings.NOTIFY_WEBHOOK_URL = f"http://127.0.0.1:{server.server_port}/hook"
    yield _Hook
    server.shutdown()


class _Inbox:
    def __init__(self):
        self.mails = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.mails.append((envelope.rcpt_tos, envelope.content.decode()))
        return "250 OK"


@pytest.fixture
def mail_server(settings):
    inbox = _Inbox()
    with socket.socket() as probe:  # a free port (aiosmtpd's controller cannot take 0)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    yield inbox
    controller.stop()


def test_a_notification_goes_to_the_webhook_and_by_mail_to_the_requester(
    ask, users, webhook, mail_server
):
    users["operator"].email = "operator@example.com"
    users["operator"].save()
    request = ask()
    approvals.reject(_actor(users, "approver"), request, "not now")
    notification = Notification.objects.get()

    assert notifications.send(notification) is True

    [posted] = webhook.received
    assert posted["event"] == "request.rejected" and posted["request"] == request.pk
    assert posted["text"].startswith(f"Isthmus: Request {request.pk} to promote orders")
    assert posted["url"].endswith(f"/approvals/{request.pk}/")
    [(to, mail)] = mail_server.mails
    assert to == ["operator@example.com"]
    assert "was rejected by approver: not now" in mail and f"/approvals/{request.pk}/" in mail
    assert Notification.objects.get().delivery == {"webhook": "sent", "email": "sent"}


def test_a_failing_webhook_is_recorded_and_tried_again_without_mailing_twice(
    ask, users, webhook, mail_server
):
    users["operator"].email = "operator@example.com"
    users["operator"].save()
    approvals.reject(_actor(users, "approver"), ask(), "not now")
    notification = Notification.objects.get()
    webhook.answer = 500

    assert notifications.send(notification) is False
    assert notification.delivery == {
        "webhook": "failed: the webhook answered HTTP 500",
        "email": "sent",
    }
    webhook.answer = 204
    assert notifications.send(notification) is True
    assert len(webhook.received) == 2 and len(mail_server.mails) == 1

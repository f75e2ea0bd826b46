"""Telling a requester what became of their request: approved, rejected, expired, superseded,
run or failed. Each is kept for the console (the navigation bar counts the unread, and
/notifications/ lists them), and sent out by a Celery task where the operator configured it:
a JSON POST to ISTHMUS_NOTIFY_WEBHOOK_URL (its `text` field is what chat tools show), and an
e-mail to the requester's address through ISTHMUS_EMAIL_HOST. A slow or failing endpoint holds
up nothing: the task tries three times, then the notification says it failed.

What concerns the links themselves (a link's RPO target breached, and met again) is told to every
operator and admin (`tell_operators`): each in the console and by e-mail, the webhook once."""

from __future__ import annotations

import json
import logging
import smtplib
import urllib.error
import urllib.request

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from replication.governance.policy import POLICY
from replication.models import ApprovalRequest, Notification

log = logging.getLogger(__name__)
RState = ApprovalRequest.State

# The states a requester is told of (a withdrawal is their own doing).
_TOLD: dict[str, str] = {
    RState.APPROVED: "was approved by {approvers}; it runs now",
    RState.REJECTED: "was rejected by {decided_by}: {decision_reason}",
    RState.EXPIRED: "expired before enough approvers agreed; ask again if it is still wanted",
    RState.SUPERSEDED: "was superseded ({decision_reason}); ask again if it is still wanted",
    RState.EXECUTED: "ran: {progress}",
    RState.FAILED: "failed: {progress}",
}


def describe(request: ApprovalRequest) -> str:
    """ "Request 12 to promote orders, payments on link ab-link"."""
    if request.action == ApprovalRequest.Action.DELETE_LINK:
        forced = ", failing its mirror topics over first" if request.force else ""
        return f"Request {request.pk} to delete link {request.link_name}{forced}"
    if request.params:
        verbs: dict[str, str] = {
            ApprovalRequest.Action.CREATE_FLOW: "create",
            ApprovalRequest.Action.PROMOTE_SUBJECTS: "make writable",
        }
        verb = verbs.get(request.action, "delete")
        return (
            f"Request {request.pk} to {verb} {request.params_summary} on link {request.link_name}"
        )
    topics = ", ".join(request.topics[:5]) + (
        f" and {len(request.topics) - 5} more" if len(request.topics) > 5 else ""
    )
    what = f"{request.get_action_display().lower()} {topics}"
    return f"Request {request.pk} to {what} on link {request.link_name}"


def tell_requester(request: ApprovalRequest) -> Notification | None:
    """Tell the requester the state `request` just moved to (None: not one they are told of,
    or their account is gone). Sent out once the caller's transaction commits."""
    said = _TOLD.get(request.state)
    if said is None or request.requester_id is None:
        return None
    approvers = ", ".join(a.approver_name for a in request.approvals.all()) or "nobody"
    text = f"{describe(request)} " + said.format(
        approvers=approvers,
        decided_by=request.decided_by,
        decision_reason=request.decision_reason,
        progress=request.progress,
    )
    notification = Notification.objects.create(
        user_id=request.requester_id,
        request=request,
        event=f"request.{request.state.lower()}",
        text=text[:2000],
    )
    _send_later(notification)
    return notification


# A notification whose webhook post another one made (`tell_operators`): "with notification 12".
_WITH = "with notification "


def tell_operators(event: str, text: str) -> list[Notification]:
    """Tell every active user who may promote or fail over (operators, admins) `text`: each in
    the console and by e-mail; the webhook is posted once, with the first of them."""
    roles = POLICY["mirror.stop"]
    users = (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(is_superuser=True) | Q(groups__name__in=roles))
        .distinct()
        .order_by("pk")
    )
    told: list[Notification] = []
    for user in users:
        delivery = {"webhook": f"{_WITH}{told[0].pk}"} if told else {}
        told.append(
            Notification.objects.create(user=user, event=event, text=text[:2000], delivery=delivery)
        )
        _send_later(told[-1])
    return told


def _send_later(notification: Notification) -> None:
    """Sent by the task once the caller's transaction commits, where the operator configured a
    webhook or e-mail."""
    if settings.NOTIFY_WEBHOOK_URL or settings.EMAIL_HOST:
        transaction.on_commit(
            lambda: current_app.send_task("replication.tasks.send_notification", [notification.pk])
        )


def send(notification: Notification) -> bool:
    """Send it by webhook and e-mail, as configured; record how each went. Returns whether all
    of it went (the task tries again while not)."""
    delivery = dict(notification.delivery)
    if settings.NOTIFY_WEBHOOK_URL and not _done(delivery.get("webhook")):
        delivery["webhook"] = _post(notification)
    email = notification.user.email
    if settings.EMAIL_HOST and email and delivery.get("email") != "sent":
        delivery["email"] = _mail(notification, email)
    notification.delivery = delivery
    notification.save(update_fields=["delivery"])
    return all(_done(v) for v in delivery.values())


def _done(outcome: str | None) -> bool:
    return outcome is not None and (outcome == "sent" or outcome.startswith(_WITH))


def _post(notification: Notification) -> str:
    request = notification.request
    body = {
        "text": f"Isthmus: {notification.text}",
        "event": notification.event,
        "user": notification.user.get_username(),
        "request": request.pk if request else None,
        "url": f"{settings.CONSOLE_URL}/approvals/{request.pk}/" if request else "",
        "at": notification.created_at.isoformat(),
    }
    # The address is the operator's setting, checked to be http(s) when the settings load.
    post = urllib.request.Request(  # noqa: S310
        settings.NOTIFY_WEBHOOK_URL,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "User-Agent": "Isthmus"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(post, timeout=10) as answer:  # noqa: S310
            answer.read(1024)
    except urllib.error.HTTPError as exc:
        return f"failed: the webhook answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"failed: the webhook did not answer ({reason})"
    return "sent"


def _mail(notification: Notification, address: str) -> str:
    request = notification.request
    link = f"\n\n{settings.CONSOLE_URL}/approvals/{request.pk}/" if request else ""
    try:
        send_mail(
            f"[Isthmus] {notification.text[:120]}",
            notification.text + link,
            settings.DEFAULT_FROM_EMAIL,
            [address],
        )
    except (smtplib.SMTPException, OSError) as exc:
        return f"failed: the mail server at {settings.EMAIL_HOST} refused or did not answer ({exc})"
    return "sent"


def unread(user) -> int:
    return Notification.objects.filter(user=user, read_at__isnull=True).count()


def read_all(user, limit: int = 100) -> list[Notification]:
    """The user's latest notifications, newest first; the unread ones are marked read now
    (they still show as new on this reading)."""
    found = list(Notification.objects.filter(user=user).select_related("request")[:limit])
    Notification.objects.filter(user=user, read_at__isnull=True).update(read_at=timezone.now())
    return found
